"""Online evaluation scores of live calls, and the signal interface other apps feed.

A metric is a number in [0, 1] about one call, with a direction. Apps report outcome
signals against the call that produced the thing being judged:

    from router.services import call_score_record
    call_score_record(call_id=agent_call_id, metric="validator.blocked", value=1.0, source="validator")

New metrics are declared once (in AppConfig.ready) with register_metric(). The guardrail job
compares arms on "goodness" (the value, or 1 - value when lower is better).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from ..models import CallScore, ModelCall


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    label: str
    url_name: str = ""  # a page (URL name) of the app that reports it, where its numbers are explained

    def goodness(self, value: float) -> float:
        return value if self.higher_is_better else 1.0 - value


_METRICS: dict[str, Metric] = {}


def register_metric(name: str, *, higher_is_better: bool, label: str, url_name: str = "") -> Metric:
    metric = Metric(name=name, higher_is_better=higher_is_better, label=label, url_name=url_name)
    _METRICS[name] = metric
    return metric


def metric(name: str) -> Metric | None:
    return _METRICS.get(name)


def metrics() -> list[Metric]:
    return sorted(_METRICS.values(), key=lambda m: m.name)


register_metric("judge.quality", higher_is_better=True, label="Online judge score of a sampled call")
register_metric("validator.blocked", higher_is_better=False, label="Agent action blocked by the validator")
register_metric("user.feedback", higher_is_better=True, label="User feedback (1 good, 0 bad)")


def call_score_record(*, call_id: int, metric: str, value: float, source: str = "") -> CallScore:
    """Record (or replace) the score of `metric` for a call. Raises ValueError for an unknown
    metric, a value outside [0, 1] or a call that does not exist."""
    if metric not in _METRICS:
        raise ValueError(f"Unknown metric {metric!r}; register it with router.services.register_metric().")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError("A score is a number between 0 and 1.") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError("A score is a number between 0 and 1.")
    if not ModelCall.objects.filter(pk=call_id).exists():
        raise ValueError(f"No model call {call_id}.")
    try:
        with transaction.atomic():
            score, _ = CallScore.objects.update_or_create(
                call_id=call_id, metric=metric, defaults={"value": value, "source": source[:60]}
            )
    except IntegrityError:
        score = CallScore.objects.get(call_id=call_id, metric=metric)
    return score
