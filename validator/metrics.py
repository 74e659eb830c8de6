"""lindy_validator_decisions : the validator's decisions by verdict. Registered in ValidatorConfig.ready."""

from collections.abc import Iterable

from django.db.models import Count, Q
from prometheus_client.core import CounterMetricFamily, Metric

from .models import Decision


def collect() -> Iterable[Metric]:
    exempt = Q(status=Decision.Status.EXEMPT)
    found = Decision.objects.aggregate(
        exempt=Count("pk", filter=exempt),
        failed=Count("pk", filter=~exempt & Q(validator_failure=True)),
        allowed=Count("pk", filter=~exempt & Q(validator_failure=False, approved=True)),
        blocked=Count("pk", filter=~exempt & Q(validator_failure=False, approved=False)),
    )
    decisions = CounterMetricFamily(
        "lindy_validator_decisions", "Actions the validator judged, by verdict: allowed, blocked, failed (no verdict "
        "could be had: blocked), exempt (not validated).", labels=["verdict"])
    for verdict in ("allowed", "blocked", "failed", "exempt"):
        decisions.add_metric([verdict], found[verdict])
    yield decisions
