"""The rollout API for engineers: /api/router/routes/{route}, rollouts, actions, targets, evals.
Superusers (a bearer token of one) only; every change is an event with who and why."""

import pytest
from django.core.management import call_command

from router import tasks
from router.models import EvalRun, Rollout, Route
from router.services import evals

from .helpers import cheap_target, route, variant


@pytest.fixture
def email(db, monkeypatch):
    # The evals are answered by the drafting app's own offline drafter, which passes the eval set.
    email = route("email.draft")
    variant(email, "flash-tuned")
    cheap_target()
    # lindy.queue finds the eval task by name and calls apply_async: run it here, at commit.
    monkeypatch.setattr(tasks.eval_run, "apply_async", lambda args, **options: tasks.eval_run.apply(args=args))
    return email


def _eval(api, name, target, variant_name, capture):
    with capture(execute=True):
        response = api.post(f"/api/router/routes/{name}/evals", {"target": target, "variant": variant_name})
    assert response.status_code == 201, response.content
    return response.json()


def test_evidence_first_then_a_rollout_and_its_actions(email, cast, api_for, django_capture_on_commit_callbacks):
    api = api_for(cast.superuser)
    start = {"target": "deepseek-v4-flash-atlas", "variant": "flash-tuned",
             "stages": [{"percent": 5, "min_hours": 1, "min_samples": 10}, {"percent": 100}]}
    refused = api.post("/api/router/routes/email.draft/rollouts", start)
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["status"] == 409 and "No offline evidence for this rollout" in error["message"]
    assert [d["type"] for d in error["details"]] == ["missing_evidence", "missing_evidence"]
    assert "deepseek-v4-flash-atlas with prompt variant 'flash-tuned'" in error["details"][0]["msg"]
    assert not Rollout.objects.exists()

    # The evals: queued by the API, run by the worker task; the run reports progress, score and passed.
    run = _eval(api, "email.draft", "deepseek-v4-flash-atlas", "flash-tuned", django_capture_on_commit_callbacks)
    assert (run["route"], run["target"], run["variant"], run["status"], run["passed"]) == (
        "email.draft", "deepseek-v4-flash-atlas", "flash-tuned", "queued", None)
    done = api.get(f"/api/router/evals/{run['id']}").json()
    assert (done["status"], done["progress"], done["score"], done["passed"], done["cases_passed"]) == (
        "done", 100, 1.0, True, len(evals.load_cases("email.draft")))
    assert done["created_by"] == cast.superuser.email
    _eval(api, "email.draft", "claude-sonnet-4-6-anthropic", "default", django_capture_on_commit_callbacks)
    listed = api.get("/api/router/evals", route="email.draft", target="deepseek-v4-flash-atlas",
                     variant="flash-tuned").json()
    assert listed["count"] == 1 and listed["items"][0]["id"] == run["id"]
    assert api.get("/api/router/evals", route="email.draft").json()["count"] == 2

    created = api.post("/api/router/routes/email.draft/rollouts", start)
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["status"], body["percent"], body["stage"]["percent"]) == ("running", "5.00", 5.0)
    assert body["offline_evidence"]["ok"] is True and body["offline_evidence"]["candidate_run"]["id"] == run["id"]
    assert body["override_reason"] == "" and body["guardrails"]["alpha"] == 0.05
    assert body["events"][0]["actor"] == cast.superuser.email
    rollout_id = body["id"]

    detail = api.get("/api/router/routes/email.draft").json()
    assert detail["baseline"]["name"] == "claude-sonnet-4-6-anthropic"
    assert {v["name"] for v in detail["variants"]} == {"default", "flash-tuned"}
    assert detail["rollout"]["id"] == rollout_id and detail["rollout"]["stage_index"] == 0
    assert detail["evidence_thresholds"] == {"min_score": 0.75, "max_error_rate": 0.0, "baseline_margin": 0.02}
    assert detail["has_eval_set"] is True

    again = api.post("/api/router/routes/email.draft/rollouts", start)
    assert again.status_code == 409 and "already has an active rollout" in again.json()["error"]["message"]

    paused = api.post(f"/api/router/rollouts/{rollout_id}/pause", {"reason": "Investigating a support ticket."})
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    assert api.post(f"/api/router/rollouts/{rollout_id}/pause").status_code == 409
    assert api.post(f"/api/router/rollouts/{rollout_id}/resume").json()["status"] == "running"
    rolled = api.post(f"/api/router/rollouts/{rollout_id}/rollback", {"reason": "Latency spike on the host."}).json()
    assert (rolled["status"], rolled["percent"]) == ("rolled_back", "0.00")
    events = [(e["kind"], e["actor"], e["reason"]) for e in rolled["events"]]
    assert events[1:] == [
        ("paused", cast.superuser.email, f"Paused by {cast.superuser.email}: Investigating a support ticket."),
        ("resumed", cast.superuser.email, "Resumed: the stage's minimum duration counts again from now."),
        ("rolled_back", cast.superuser.email, f"Rolled back by {cast.superuser.email}: Latency spike on the host."),
    ]
    assert api.post(f"/api/router/rollouts/{rollout_id}/complete").status_code == 409


def test_complete_makes_the_candidate_the_baseline(email, cast, api_for):
    api = api_for(cast.superuser)
    body = api.post("/api/router/routes/email.draft/rollouts", {
        "target": "deepseek-v4-flash-atlas", "variant": "flash-tuned",
        "override_reason": "Evals are down; the provider is retiring the baseline tonight."}).json()
    assert body["override_reason"].startswith("Evals are down") and body["override_by"] == cast.superuser.email
    done = api.post(f"/api/router/rollouts/{body['id']}/complete", {"reason": "Looks good."}).json()
    assert done["status"] == "completed"
    assert Route.objects.get(name="email.draft").baseline.name == "deepseek-v4-flash-atlas"


def test_targets_list_names_models_and_prices(email, cast, api_for):
    rows = {t["name"]: t for t in api_for(cast.superuser).get("/api/router/targets").json()}
    flash = rows["deepseek-v4-flash-atlas"]
    assert (flash["model"], flash["provider"], flash["host"], flash["quantization"]) == (
        "deepseek-v4-flash", "openai", "atlas", "fp8")
    assert (flash["input_price"], flash["output_price"]) == ("0.1400", "0.2800")
    assert "offline-rules" in rows


@pytest.mark.parametrize("path,body,status,message", [
    ("/api/router/routes/nope/rollouts", {"target": "offline-rules"}, 404, "No route 'nope'"),
    ("/api/router/routes/email.draft/rollouts", {"target": "nope"}, 422, "No target named 'nope'"),
    ("/api/router/routes/email.draft/rollouts", {"target": "offline-rules", "variant": "missing"}, 422,
     "no prompt variant 'missing'"),
    ("/api/router/routes/email.draft/rollouts", {"target": "offline-rules", "stages": [{"percent": 50},
                                                                                       {"percent": 10}]}, 422,
     "must rise strictly"),
    ("/api/router/routes/email.draft/rollouts", {"target": "offline-rules", "stages": [{"percent": 500}]}, 422,
     "stages.0.percent"),
    ("/api/router/routes/email.draft/rollouts", {"target": "claude-sonnet-4-6-anthropic"}, 422,
     "baseline already"),
    ("/api/router/routes/email.draft/evals", {"target": "offline-rules", "variant": "missing"}, 422,
     "no prompt variant 'missing'"),
    ("/api/router/routes/agent/evals", {"target": "offline-rules"}, 422, "no eval set"),
    ("/api/router/rollouts/999999/pause", {}, 404, "No rollout 999999"),
    ("/api/router/rollouts/99999999999999999999/rollback", {}, 404, "No rollout 99999999999999999999"),
])
def test_bad_input_gets_a_4xx_in_the_error_shape_and_changes_nothing(email, cast, api_for, path, body, status,
                                                                    message):
    route("agent")
    response = api_for(cast.superuser).post(path, body)
    assert response.status_code == status, response.content
    assert message in response.json()["error"]["message"]
    assert not Rollout.objects.exists() and not EvalRun.objects.exists()


def test_a_nul_in_a_name_is_bad_input_not_a_database_error(email, cast, api_for):
    api = api_for(cast.superuser)
    assert api.get("/api/router/routes/email%00draft").status_code == 422
    assert api.get("/api/router/evals", route="email\x00draft").status_code == 422
    assert api.get("/api/router/evals", variant="\x00").json()["error"]["message"] == (
        "The variant contains a NUL character.")


def test_only_superusers(email, cast, api_for):
    for user in (cast.member, cast.admin, cast.support, cast.other_admin):
        api = api_for(user)
        for response in (api.get("/api/router/routes/email.draft"), api.get("/api/router/targets"),
                         api.get("/api/router/evals"),
                         api.post("/api/router/routes/email.draft/rollouts", {"target": "offline-rules",
                                                                              "override_reason": "mine"}),
                         api.post("/api/router/routes/email.draft/evals", {"target": "offline-rules"})):
            assert response.status_code == 403
            assert response.json()["error"]["message"] == "Only superusers manage routing."
    assert not Rollout.objects.exists() and not EvalRun.objects.exists()


def test_eval_list_queries_do_not_grow_with_runs(email, cast, api_for, django_assert_max_num_queries):
    api = api_for(cast.superuser)
    for _ in range(15):
        EvalRun.objects.create(route=email, target=cheap_target(), variant="flash-tuned", status="done", total=3,
                               completed=3, passed=3, score=1.0, created_by=cast.superuser)
    with django_assert_max_num_queries(6):
        assert api.get("/api/router/evals", limit=10).json()["count"] == 15


def test_run_guardrails_prints_the_decision(email, cast, capsys):
    from .helpers import offline_evidence

    offline_evidence(email, cheap_target(), "flash-tuned")
    from router import services

    rollout = services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    call_command("run_guardrails", "--dry-run")
    out = capsys.readouterr().out
    assert f"rollout {rollout.pk} email.draft -> deepseek-v4-flash-atlas:flash-tuned at 1.00% (running): hold" in out
    assert "hold: not enough evidence yet: no online eval scores yet" in out
    call_command("run_guardrails")
    out = capsys.readouterr().out
    assert f"rollout {rollout.pk} email.draft" in out and ": hold" in out and "(dry run)" not in out
    rollout.refresh_from_db()
    assert rollout.last_check["decision"] == "hold"


def test_actions_take_an_empty_body_or_a_reason(email, cast, api_for):
    api = api_for(cast.superuser)
    rollout_id = api.post("/api/router/routes/email.draft/rollouts", {
        "target": "deepseek-v4-flash-atlas", "variant": "flash-tuned", "override_reason": "Testing the API."}).json()["id"]
    empty = api.client.post(f"/api/router/rollouts/{rollout_id}/pause")
    assert empty.json().get("status") == "paused", empty.content
    for raw, status in (("[1]", 422), ('"why"', 422), ('{"reason": 5}', 422), ("{", 400),
                        ('{"reason": "' + "x" * 2001 + '"}', 422)):
        response = api.post(f"/api/router/rollouts/{rollout_id}/resume", raw=raw)
        assert response.status_code == status, (raw, response.content)
        assert response.json()["error"]["status"] == status
    assert Rollout.objects.get().status == "paused"
    assert api.post(f"/api/router/rollouts/{rollout_id}/resume", raw="null").json()["status"] == "running"


def test_route_detail_queries_do_not_grow_with_events(email, cast, api_for, django_assert_max_num_queries):
    from .helpers import offline_evidence

    offline_evidence(email, cheap_target(), "flash-tuned")
    api = api_for(cast.superuser)
    rollout_id = api.post("/api/router/routes/email.draft/rollouts", {
        "target": "deepseek-v4-flash-atlas", "variant": "flash-tuned"}).json()["id"]
    for _ in range(10):
        api.post(f"/api/router/rollouts/{rollout_id}/pause", {"reason": "again"})
        api.post(f"/api/router/rollouts/{rollout_id}/resume", {"reason": "again"})
    with django_assert_max_num_queries(10):
        body = api.get("/api/router/routes/email.draft").json()
    assert len(body["rollout"]["events"]) == 21
