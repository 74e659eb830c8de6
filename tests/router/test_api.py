"""GET /api/router/routes/{route}/assignment ("why this model?"), routes, and score signals."""

import pytest

from router import services
from router.models import CallScore, ModelCall

from .helpers import cheap_target, offline_evidence, route, variant


@pytest.fixture
def rollout(db):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    return services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")


def test_assignment_explains_each_reason(cast, rollout, api_for):
    api = api_for(cast.superuser)
    internal = api.get("/api/router/routes/email.draft/assignment", user_id=cast.member.pk).json()
    assert (internal["reason"], internal["arm"], internal["target"]["name"], internal["prompt_variant"]) == (
        "internal", "candidate", "deepseek-v4-flash-atlas", "flash-tuned")
    assert internal["rollout"]["id"] == rollout.pk and internal["target"]["host"] == "atlas"

    other = api.get("/api/router/routes/email.draft/assignment", user_id=cast.other_admin.pk).json()
    assert other["reason"] == ("bucket" if other["bucket"] < 100 else "baseline")
    services.rollout_ramp(rollout=rollout, reason="test")
    for _ in range(4):
        rollout.refresh_from_db()
        services.rollout_ramp(rollout=rollout, reason="test")
    rollout.refresh_from_db()
    assert rollout.percent == 100
    bucketed = api.get("/api/router/routes/email.draft/assignment", user_id=cast.other_admin.pk).json()
    assert bucketed["reason"] == "bucket" and "below the rollout's threshold" in bucketed["explanation"]

    services.model_choice_set(user=cast.other_admin, target=rollout.baseline)
    chosen = api.get("/api/router/routes/email.draft/assignment", user_id=cast.other_admin.pk).json()
    assert (chosen["reason"], chosen["target"]["name"]) == ("explicit_choice", "claude-sonnet-4-6-anthropic")

    plain = api.get("/api/router/routes/agent/assignment", user_id=cast.admin.pk).json()
    assert plain["reason"] == "baseline" and plain["rollout"] is None


def test_a_user_may_ask_about_themself_only(cast, rollout, api_for):
    api = api_for(cast.admin)
    assert api.get("/api/router/routes/email.draft/assignment", user_id=cast.admin.pk).status_code == 200
    assert api.get("/api/router/routes/email.draft/assignment").json()["user_id"] == cast.admin.pk
    other = api.get("/api/router/routes/email.draft/assignment", user_id=cast.member.pk)
    assert other.status_code == 404 and other.json()["error"]["status"] == 404


def test_assignment_bad_input(cast, api_for):
    api = api_for(cast.superuser)
    assert api.get("/api/router/routes/nope/assignment", user_id=cast.admin.pk).status_code == 404
    assert api.get("/api/router/routes/agent/assignment", user_id=999_999).status_code == 404
    bad = api.get("/api/router/routes/agent/assignment", user_id="abc")
    assert bad.status_code == 422 and bad.json()["error"]["message"]
    from router.models import Route

    assert not Route.objects.filter(name="nope").exists()


def test_routes_list(cast, rollout, api_for):
    rows = {r["name"]: r for r in api_for(cast.admin).get("/api/router/routes").json()}
    assert rows["email.draft"]["rollout"]["candidate"] == "deepseek-v4-flash-atlas"
    assert rows["agent"]["rollout"] is None
    assert api_for(cast.member).get("/api/router/routes").status_code == 404


def test_score_endpoint(cast, rollout, api_for):
    call = ModelCall.objects.create(route="email.draft", provider="offline", model="m", rollout=rollout, arm="candidate")
    api = api_for(cast.superuser)
    ok = api.post(f"/api/router/calls/{call.pk}/scores", {"metric": "validator.blocked", "value": 1, "source": "validator"})
    assert ok.status_code == 201 and ok.json()["metric"] == "validator.blocked"
    assert api.post(f"/api/router/calls/{call.pk}/scores", {"metric": "nope", "value": 1}).status_code == 422
    assert api.post(f"/api/router/calls/{call.pk}/scores", {"metric": "validator.blocked", "value": 7}).status_code == 422
    assert api.post(f"/api/router/calls/{call.pk}/scores", raw="{not json").status_code == 400
    assert api.post("/api/router/calls/999999/scores", {"metric": "validator.blocked", "value": 1}).status_code == 404
    assert api_for(cast.admin).post(f"/api/router/calls/{call.pk}/scores",
                                    {"metric": "validator.blocked", "value": 0}).status_code == 404
    assert CallScore.objects.get().value == 1
