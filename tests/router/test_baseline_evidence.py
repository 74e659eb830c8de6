"""No model on a route without evidence (issue 29, part 2).

Setting a route's baseline, like starting a rollout, needs a passing offline eval of exactly that
(route, target, variant): its thresholds and the owning app's gate. A superuser may override with a
written reason, kept and shown on the route page, but never on the validator's route, whose model
decides what reaches third parties: the probe moved it to a model with no eval at all.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from lindy.models import AuditEntry
from router import routing, services
from router.models import AuditAction, EvalRun, Route, Target
from tests.conftest import client_for

from .helpers import cheap_target

REASON = "The provider retires the old model tonight; evals for this route are being written."


@pytest.fixture
def haiku(db):
    routing.ensure_defaults()
    return Target.objects.get(name="claude-haiku-4-5-anthropic")


def _run(route, target, *, score=1.0, gate_failures=None, variant="default"):
    return EvalRun.objects.create(route=route, target=target, variant=variant, status=EvalRun.Status.DONE, total=3,
                                  completed=3, passed=3, score=score, finished_at=timezone.now(),
                                  gate_failures=gate_failures or [])


def test_a_baseline_without_an_eval_is_refused(cast, haiku):
    agent = Route.objects.get(name="agent")
    before = agent.baseline_id
    with pytest.raises(services.MissingEvidence, match="no offline eval set"):
        services.route_baseline_set(route=agent, baseline=haiku, actor=cast.superuser)
    response = client_for(cast.superuser).post("/router/routes/agent/baseline/",
                                               {"baseline": haiku.pk, "baseline_variant": "default"})
    assert response.status_code == 409 and "no offline eval set" in response.content.decode()
    assert Route.objects.get(name="agent").baseline_id == before


def test_a_superusers_override_needs_a_reason_is_kept_and_shown(cast, haiku):
    client = client_for(cast.superuser)
    response = client.post("/router/routes/agent/baseline/", {"baseline": haiku.pk, "baseline_variant": "default",
                                                              "override_reason": REASON})
    assert response.status_code == 302
    agent = Route.objects.get(name="agent")
    assert (agent.baseline_id, agent.baseline_override_reason, agent.baseline_override_by) == (
        haiku.pk, REASON, cast.superuser)
    page = client.get("/router/routes/agent/").content.decode()
    assert "Set WITHOUT a passing offline eval" in page and REASON in page and cast.superuser.email in page
    event = AuditEntry.objects.filter(action=AuditAction.ROUTE_BASELINE_SET).latest("pk")
    assert event.after["baseline_override_reason"] == REASON


def test_only_a_superuser_may_override(cast, haiku):
    with pytest.raises(ValidationError) as refused:
        services.route_baseline_set(route=Route.objects.get(name="agent"), baseline=haiku, actor=cast.admin,
                                    override_reason=REASON)
    assert refused.value.error_list[0].code == "override_forbidden"


def test_the_validator_moves_only_on_its_eval_passing_its_gate(cast, haiku):
    validator = Route.objects.get(name="validator")
    before = (validator.baseline_id, validator.baseline_variant)
    atlas = cheap_target()
    # No eval at all: refused, override or not (the probe's move).
    for reason in ("", REASON):
        with pytest.raises(services.MissingEvidence, match="no override applies"):
            services.route_baseline_set(route=validator, baseline=atlas, actor=cast.superuser, override_reason=reason)
    response = client_for(cast.superuser).post("/router/routes/validator/baseline/", {
        "baseline": atlas.pk, "baseline_variant": "default", "override_reason": REASON})
    assert response.status_code == 409
    assert 'name="override_reason"' not in client_for(cast.superuser).get("/router/routes/validator/").content.decode() \
        .split('id="evidence-rule"')[0]
    # An eval that scored well but missed the validator's gate (a dangerous action approved): refused.
    _run(validator, atlas, score=0.95, gate_failures=["approved a dangerous action: send_email to a stranger"])
    with pytest.raises(services.MissingEvidence, match="dangerous action"):
        services.route_baseline_set(route=validator, baseline=atlas, actor=cast.superuser)
    validator.refresh_from_db()
    assert (validator.baseline_id, validator.baseline_variant) == before
    # A rollout's override does not apply to the validator either.
    with pytest.raises(services.MissingEvidence, match="no override applies"):
        services.rollout_start(route=validator, candidate=atlas, actor=cast.superuser, override_reason=REASON)
    # The real eval of the offline rules on the validator's set, through its gate: it may serve.
    offline = Target.objects.get(name="offline-rules")
    run = services.eval_run_create(route=validator, target=offline, variant="default")
    services.eval_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE and not run.gate_failures, run.gate_failures
    services.route_baseline_set(route=validator, baseline=offline, actor=cast.superuser)
    validator.refresh_from_db()
    assert validator.baseline_id == offline.pk and validator.baseline_override_reason == ""


def test_a_baseline_set_on_evidence_clears_an_earlier_override(cast, haiku):
    from tests.router.helpers import route as registered

    email = registered("email.draft")
    services.route_baseline_set(route=email, baseline=haiku, actor=cast.superuser, override_reason=REASON)
    assert Route.objects.get(pk=email.pk).baseline_override_reason == REASON
    atlas = cheap_target()
    _run(email, atlas, score=0.5)  # below the threshold: still missing
    with pytest.raises(services.MissingEvidence, match="below the threshold"):
        services.route_baseline_set(route=Route.objects.get(pk=email.pk), baseline=atlas, actor=cast.superuser)
    _run(email, atlas, score=0.9)
    services.route_baseline_set(route=Route.objects.get(pk=email.pk), baseline=atlas, actor=cast.superuser)
    email.refresh_from_db()
    assert (email.baseline_id, email.baseline_override_reason, email.baseline_override_by) == (atlas.pk, "", None)
