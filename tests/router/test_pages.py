"""Models pages: who sees what, the buttons, forms with bad input, bounded queries."""

import re
from datetime import timedelta

import pytest

from router import routing, services
from router.models import EvalRun, ModelCall, ModelChoice, Provider, Rollout, Route, Target
from router.offline import OfflineReply, tool_call
from tests.conftest import client_for

from .helpers import cheap_target, offline_evidence, record_call, route, variant


@pytest.fixture
def rollout(db):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    for arm in ("baseline", "candidate"):
        for days in range(3):
            record_call(rollout=rollout, arm=arm, ago=timedelta(days=days))
    return rollout


@pytest.mark.django_db
@pytest.mark.parametrize("who, status", [("superuser", 200), ("admin", 302), ("member", 404), ("support", 404)])
def test_routes_page_visibility(cast, who, status):
    response = client_for(getattr(cast, who)).get("/router/")
    assert response.status_code == status


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["admin", "member", "support", "other_admin"])
def test_management_pages_are_for_superusers_only(cast, rollout, who):
    client = client_for(getattr(cast, who))
    for url in ["/router/routes/email.draft/", f"/router/rollouts/{rollout.pk}/", "/router/targets/"]:
        assert client.get(url).status_code == 404, url
    assert client.post(f"/router/rollouts/{rollout.pk}/pause/").status_code == 404
    rollout.refresh_from_db()
    assert rollout.status == "running"


@pytest.mark.django_db
def test_routes_page_shows_baseline_rollout_and_percentage(cast, rollout, django_assert_max_num_queries):
    client = client_for(cast.superuser)
    client.get("/router/costs/")
    with django_assert_max_num_queries(8):
        body = client.get("/router/").content.decode()
    assert "deepseek-v4-flash-atlas" in body and "flash-tuned" in body and "1%" in body
    assert f"/router/rollouts/{rollout.pk}/" in body
    # The team admin does not see the product's routing: they are sent to their team's model use.
    admin = client_for(cast.admin).get("/router/", follow=True)
    assert admin.redirect_chain == [("/router/costs/", 302)]
    assert "/router/rollouts/" not in admin.content.decode()


@pytest.mark.django_db
def test_rollout_page_and_buttons(cast, rollout, django_assert_max_num_queries):
    client = client_for(cast.superuser)
    client.get("/router/")
    with django_assert_max_num_queries(20):
        body = client.get(f"/router/rollouts/{rollout.pk}/").content.decode()
    assert 'id="share-data"' in body and "chart.umd.min.js" in body and "Stage history" in body
    assert client.post(f"/router/rollouts/{rollout.pk}/pause/").status_code == 302
    rollout.refresh_from_db()
    assert rollout.status == "paused"
    client.post(f"/router/rollouts/{rollout.pk}/resume/", HTTP_HX_REQUEST="true")
    rollout.refresh_from_db()
    assert rollout.status == "running"
    client.post(f"/router/rollouts/{rollout.pk}/roll-back/", {"reason": "users say drafts feel off"})
    rollout.refresh_from_db()
    assert rollout.status == "rolled_back" and rollout.percent == 0
    event = rollout.events.last()
    assert event.actor == cast.superuser and "users say drafts feel off" in event.reason
    # An ended rollout cannot be paused: a message, nothing changes.
    response = client.post(f"/router/rollouts/{rollout.pk}/pause/", follow=True)
    assert "Only a running rollout can be paused." in response.content.decode()
    assert client.post(f"/router/rollouts/{rollout.pk}/explode/").status_code == 404
    assert client.get(f"/router/rollouts/{rollout.pk}/pause/").status_code == 405


@pytest.mark.django_db
def test_start_rollout_from_the_route_page(cast):
    target = cheap_target()
    email = route("email.draft")
    variant(email, "flash-tuned")
    client = client_for(cast.superuser)
    form = {"candidate": target.pk, "candidate_variant": "flash-tuned", "stages": "1 24 30\n10 48 100\n100 0 0",
            "include_internal": "on", "score_margin": "0.05", "min_scored_calls": "30", "retention_days": "7",
            "retention_margin": "0.1"}
    bad = client.post("/router/routes/email.draft/rollouts/", {**form, "stages": "10 1 1\n5 1 1"})
    assert bad.status_code == 400 and "must rise" in bad.content.decode()
    assert not Rollout.objects.exists()
    # No offline evidence: the form says what is missing, and nothing starts.
    refused = client.post("/router/routes/email.draft/rollouts/", form)
    page = refused.content.decode()
    assert refused.status_code == 409 and not Rollout.objects.exists()
    assert "No finished offline eval of email.draft on deepseek-v4-flash-atlas with prompt variant" in page
    assert 'id="evidence-rule"' in page and "no worse than the latest eval of the baseline" in page
    # Each missing eval has its button: the candidate's and the baseline's, and pressing one starts it.
    buttons = re.findall(r'<form method="post" action="/router/routes/email.draft/evals/".*?name="target" value="(\d+)">'
                         r'<input type="hidden" name="variant" value="([^"]+)">', page, re.S)
    assert buttons == [(str(target.pk), "flash-tuned"), (str(email.baseline_id), email.baseline_variant)]
    started = client.post("/router/routes/email.draft/evals/", {"target": buttons[0][0], "variant": buttons[0][1]})
    run = EvalRun.objects.get(route=email, target=target, variant="flash-tuned")
    assert started.status_code == 302 and started["Location"] == f"/router/evals/{run.pk}/"
    offline_evidence(email, target, "flash-tuned")
    response = client.post("/router/routes/email.draft/rollouts/", form)
    rollout = Rollout.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/router/rollouts/{rollout.pk}/"
    assert [s["percent"] for s in rollout.stages] == [1, 10, 100] and rollout.created_by == cast.superuser
    assert rollout.alpha == 0.05 and rollout.override_reason == ""
    assert 'id="offline-evidence"' in client.get(response["Location"]).content.decode()
    again = client.post("/router/routes/email.draft/rollouts/", form)
    assert again.status_code == 409 and Rollout.objects.count() == 1


@pytest.mark.django_db
def test_a_superuser_starts_without_evidence_from_the_page_only_with_a_reason(cast):
    target = cheap_target()
    email = route("email.draft")
    variant(email, "flash-tuned")
    client = client_for(cast.superuser)
    form = {"candidate": target.pk, "candidate_variant": "flash-tuned", "stages": "1 24 30\n100 0 0",
            "include_internal": "on", "score_margin": "0.05", "min_scored_calls": "30", "retention_days": "7",
            "retention_margin": "0.1", "alpha": "0.05", "override_reason": "  "}
    assert client.post("/router/routes/email.draft/rollouts/", form).status_code == 409
    form["override_reason"] = "The eval set has no case for this language yet; watching it by hand."
    response = client.post("/router/routes/email.draft/rollouts/", form)
    rollout = Rollout.objects.get()
    assert response.status_code == 302 and rollout.override_by == cast.superuser
    page = client.get(response["Location"]).content.decode()
    assert "Started without offline evidence" in page and "no case for this language yet" in page


@pytest.mark.django_db
def test_targets_and_providers_forms(cast):
    client = client_for(cast.superuser)
    assert client.get("/router/targets/").status_code == 200
    bad = client.post("/router/providers/new/", {"name": "atlas", "kind": "openai", "base_url": "", "api_key_env": "X",
                                                 "timeout_seconds": 60, "max_retries": 2})
    assert bad.status_code == 400 and not Provider.objects.filter(name="atlas").exists()
    client.post("/router/providers/new/", {"name": "atlas", "kind": "openai", "base_url": "https://api.atlas.test/v1",
                                           "api_key_env": "LINDY_PROVIDER_KEY_ATLAS", "timeout_seconds": 60, "max_retries": 2})
    host = Provider.objects.get(name="atlas")
    orphan = client.post("/router/targets/new/", {"name": "flash", "provider": "openai", "model": "deepseek-v4-flash",
                                                  "input_price": "0.1", "output_price": "0.2", "cache_write_price": "0",
                                                  "cache_read_price": "0"})
    assert orphan.status_code == 400
    client.post("/router/targets/new/", {"name": "flash", "provider": "openai", "host": host.pk, "model": "deepseek-v4-flash",
                                         "input_price": "0.1", "output_price": "0.2", "cache_write_price": "0",
                                         "cache_read_price": "0"})
    assert Target.objects.get(name="flash").host == host
    # The routing table knows the new target at once.
    assert any(t.name == "flash" for t in routing.table().targets.values())


@pytest.mark.django_db
def test_baseline_change_is_refused_during_a_rollout(cast, rollout):
    client = client_for(cast.superuser)
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    response = client.post("/router/routes/email.draft/baseline/", {"baseline": haiku.pk, "baseline_variant": "default"})
    assert response.status_code == 409
    assert Route.objects.get(name="email.draft").baseline.name == "claude-sonnet-4-6-anthropic"
    client.post("/router/routes/agent/baseline/", {"baseline": haiku.pk, "baseline_variant": "default",
                                                   "override_reason": "The agent route has no eval set yet."})
    assert Route.objects.get(name="agent").baseline == haiku


@pytest.mark.django_db
def test_eval_from_the_ui_with_progress(cast, offline_rule, monkeypatch, django_capture_on_commit_callbacks):
    from router import tasks

    offline_rule("validator", lambda request: OfflineReply(tool_calls=[tool_call("record_verdict", {
        "approved": False, "reasoning": "rule", "confidence": "high", "suggestedNextStep": "ask the user"})]))
    # The task runs in this process (lindy.queue looks it up by name and calls apply_async).
    monkeypatch.setattr(tasks.eval_run, "apply_async", lambda args, **options: tasks.eval_run.apply(args=args))
    client = client_for(cast.superuser)
    offline = Target.objects.get(name="offline-rules")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/router/routes/validator/evals/", {"target": offline.pk, "variant": "default"})
    run = EvalRun.objects.get()
    assert response["Location"] == f"/router/evals/{run.pk}/"
    assert (run.__class__.objects.get().status, EvalRun.objects.get().completed) == ("done", 60)
    partial = client.get(f"/router/evals/{run.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<progress" in partial and 'value="60"' in partial and "hx-trigger" not in partial
    page = client.get("/router/routes/validator/").content.decode()
    assert "offline-rules" in page and "58%" in page  # 33 block + 2 exempt of the 60 cases


@pytest.mark.django_db
def test_running_eval_polls(cast):
    run = EvalRun.objects.create(route=route("validator"), target=Target.objects.get(name="offline-rules"), total=12,
                                 completed=3, status="running")
    body = client_for(cast.superuser).get(f"/router/evals/{run.pk}/").content.decode()
    assert 'hx-trigger="every 1s"' in body and 'value="3"' in body and 'http-equiv="refresh"' in body


@pytest.mark.django_db
def test_cost_page_scopes_usage_by_team(cast, django_assert_max_num_queries):
    routing.ensure_defaults()
    sonnet = Target.objects.get(name="claude-sonnet-4-6-anthropic")
    ModelCall.objects.create(route="agent", team=cast.team, target=sonnet, provider="anthropic", model="m",
                             input_tokens=1000, cost="0.123400")
    ModelCall.objects.create(route="validator", team=cast.other_team, target=sonnet, provider="anthropic", model="m",
                             input_tokens=1000, cost="9.876500")
    client = client_for(cast.admin)
    client.get("/router/")
    with django_assert_max_num_queries(8):
        admin = client.get("/router/costs/").content.decode()
    assert "$0.1234" in admin and "9.8765" not in admin
    everything = client_for(cast.superuser).get("/router/costs/?days=30&route=validator").content.decode()
    assert "9.8765" in everything and "0.1234" not in everything
    assert client_for(cast.superuser).get("/router/costs/?days=nonsense").status_code == 200
    assert client_for(cast.member).get("/router/costs/").status_code == 404
    partial = client_for(cast.admin).get("/router/costs/", HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="cost-body">')


@pytest.mark.django_db
def test_my_model_choice(cast):
    target = cheap_target()
    client = client_for(cast.member)
    page = client.get("/router/my-model/").content.decode()
    assert "your choice wins over any rollout" in page
    client.post("/router/my-model/", {"route": "validator", "target": target.pk})
    assert ModelChoice.objects.get(user=cast.member).route == "validator"
    assert routing.assign("validator", cast.member).reason == "explicit_choice"
    page = client.get("/router/my-model/").content.decode()
    assert "chose deepseek-v4-flash-atlas for this route" in page
    # Only offered targets; unknown routes rejected.
    offline = Target.objects.get(name="offline-rules")
    assert client.post("/router/my-model/", {"route": "", "target": offline.pk}).status_code == 400
    assert client.post("/router/my-model/", {"route": "nope", "target": target.pk}).status_code == 400
    client.post("/router/my-model/", {"route": "validator", "target": ""})
    assert not ModelChoice.objects.filter(user=cast.member).exists()
    assert client_for(cast.support).get("/router/my-model/").status_code == 404


@pytest.mark.django_db
def test_navigation(cast):
    admin = client_for(cast.admin).get("/router/costs/").content.decode()
    assert 'data-nav="models"' in admin
    member = client_for(cast.member).get("/router/my-model/").content.decode()
    assert 'data-nav="my-model"' in member and 'data-nav="models"' not in member


@pytest.mark.django_db
def test_team_admins_only_ever_see_their_own_teams_usage(cast):
    """An admin of Acme who is a plain member of Globex sees Acme's calls only: on the page, its
    htmx partial, the chart data, any route filter; Globex's own admin sees Globex's only."""
    import json

    from lindy.models import Membership

    routing.ensure_defaults()
    sonnet = Target.objects.get(name="claude-sonnet-4-6-anthropic")
    Membership.objects.create(team=cast.other_team, user=cast.admin, role="member")
    ModelCall.objects.create(route="agent", team=cast.team, user=cast.admin, target=sonnet, provider="anthropic",
                             model="m", input_tokens=111, cost="0.111100")
    ModelCall.objects.create(route="agent", team=cast.other_team, user=cast.admin, target=sonnet,
                             provider="anthropic", model="m", input_tokens=777, cost="7.777700")
    ModelCall.objects.create(route="agent", team=None, user=cast.admin, target=sonnet, provider="anthropic",
                             model="m", input_tokens=555, cost="5.555500")
    acme = client_for(cast.admin)
    for url in ("/router/costs/", "/router/costs/?route=agent&days=30", "/router/costs/?route=nope&page=x"):
        body = acme.get(url).content.decode()
        assert "7.7777" not in body and "5.5555" not in body, url
    body = acme.get("/router/costs/").content.decode()
    assert "0.1111" in body and "your team&#x27;s usage" in body
    chart = json.loads(body.split('id="cost-data" type="application/json">')[1].split("</script>")[0])
    assert [sum(d["data"]) for d in chart["datasets"]] == [pytest.approx(0.1111)]
    partial = acme.get("/router/costs/", HTTP_HX_REQUEST="true").content.decode()
    assert "0.1111" in partial and "7.7777" not in partial
    globex = client_for(cast.other_admin).get("/router/costs/").content.decode()
    assert "7.7777" in globex and "0.1111" not in globex and "5.5555" not in globex
    # Rollout savings (every team's traffic) are for superusers only.
    assert 'id="savings"' not in body
    for who in (cast.member, cast.support):
        assert client_for(who).get("/router/costs/").status_code == 404


@pytest.mark.django_db
def test_rollout_page_shows_users_and_calls_per_user_since_the_stage_started(cast):
    """Users are the unit the guardrails compare; calls per user are shown beside them."""
    import re

    from tests.factories import UserFactory

    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    record_call(rollout=rollout, arm="candidate", ago=timedelta(days=1))  # before the stage started: not counted
    users = UserFactory.create_batch(2)
    for user, n in zip(users, (3, 1), strict=True):
        for _ in range(n):
            record_call(rollout=rollout, arm="candidate", user=user)
    for _ in range(5):
        record_call(rollout=rollout, arm="baseline", user=users[0])
    body = client_for(cast.superuser).get(f"/router/rollouts/{rollout.pk}/").content.decode()
    assert re.findall(r"<td data-users>(\d+)</td>", body) == ["1", "2"]
    assert re.findall(r"<td data-calls-per-user>([\d.]+)</td>", body) == ["5.0", "2.0"]
