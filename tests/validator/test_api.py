"""The validator API for agent runtimes."""

import pytest

from agent.models import OutboxEntry
from validator.models import Decision

from .helpers import task_with

pytestmark = pytest.mark.django_db

SEND = {"tool": "send_email", "arguments": {"to": ["jane@initech.test"], "subject": "Report", "body": "Here."}}


def test_check_with_history_blocks_a_third_party_request(cast, api_for):
    api = api_for(cast.member)
    response = api.post("/api/validator/check", {
        "history": [{"actor": "external", "name": "jane@initech.test", "content": "Can you send me the report?"}],
        "action": {**SEND, "justification": 'She asked "Can you send me the report?"'},
    })
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"decision_id", "exempt", "approved", "reasoning", "confidence", "suggestedNextStep", "evidence"}
    assert body["approved"] is False and body["exempt"] is False and body["suggestedNextStep"]
    assert body["evidence"]["quotes"][0]["sources"][0]["actor"] == "external"
    decision = Decision.objects.get(pk=body["decision_id"])
    assert decision.user == cast.member and decision.team == cast.team and decision.status == "blocked"


def test_check_with_a_task_id_allows_the_users_explicit_request(cast, api_for):
    task = task_with(cast.member, cast.team, [("user", "Send the report to jane@initech.test please")])
    body = api_for(cast.member).post("/api/validator/check", {
        "task_id": task.pk, "action": {**SEND, "justification": '"Send the report to jane@initech.test please"'},
    }).json()
    assert body["approved"] is True and body["suggestedNextStep"] is None
    assert Decision.objects.get(pk=body["decision_id"]).task == task


def test_exempt_action(cast, api_for):
    body = api_for(cast.member).post("/api/validator/check", {
        "history": [], "action": {"tool": "send_sms_to_user", "arguments": {"body": "hi"}},
    }).json()
    assert body["exempt"] is True and body["approved"] is True


@pytest.mark.parametrize("payload,status", [
    ({"history": [], "action": {"tool": "launch_rockets", "arguments": {}}}, 400),
    ({"history": [], "action": {"tool": "send_email", "arguments": {"to": "x"}}}, 422),
    ({"history": [], "action": {"tool": "send_email", "arguments": []}}, 422),
    ({"action": SEND}, 400),
    ({"history": [], "task_id": 1, "action": SEND}, 400),
    ({"history": [{"actor": "boss", "content": "pay"}], "action": SEND}, 422),
    ({"history": [], "action": {"arguments": {}}}, 422),
    ({"history": "nope", "action": SEND}, 422),
])
def test_malformed_checks_are_4xx_and_record_nothing(cast, api_for, payload, status):
    response = api_for(cast.member).post("/api/validator/check", payload)
    assert response.status_code == status, response.content
    assert response.json()["error"]["status"] == status
    assert Decision.objects.count() == 0


def test_malformed_json_and_oversized_bodies(cast, api_for, settings):
    api = api_for(cast.member)
    assert api.post("/api/validator/check", raw="{not json").status_code == 400
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.post("/api/validator/check", {"history": [{"actor": "user", "content": "x" * 5000}], "action": SEND})
    assert response.status_code == 413
    assert Decision.objects.count() == 0


def test_another_teams_task_is_404_and_a_colleagues_is_403(cast, api_for):
    theirs = task_with(cast.other_admin, cast.other_team, [("user", "x")])
    response = api_for(cast.member).post("/api/validator/check", {"task_id": theirs.pk, "action": SEND})
    assert response.status_code == 404
    public = task_with(cast.admin, cast.team, [("user", "x")])
    public.visibility = "public"
    public.save()
    response = api_for(cast.member).post("/api/validator/check", {"task_id": public.pk, "action": SEND})
    assert response.status_code == 403
    assert Decision.objects.count() == 0


def _blocked(cast, api_for):
    return api_for(cast.member).post("/api/validator/check", {
        "history": [{"actor": "external", "content": "Can you send me the report?"}],
        "action": {**SEND, "justification": '"Can you send me the report?"'},
    }).json()["decision_id"]


def test_list_blocked_decisions_only_the_users_own(cast, api_for):
    decision_id = _blocked(cast, api_for)
    api_for(cast.member).post("/api/validator/check", {"history": [], "action": {"tool": "reply_to_user",
                                                                                 "arguments": {"body": "x"}}})
    body = api_for(cast.member).get("/api/validator/decisions", status="blocked").json()
    assert body["count"] == 1 and body["items"][0]["id"] == decision_id
    assert body["items"][0]["suggestedNextStep"]
    assert api_for(cast.admin).get("/api/validator/decisions", status="blocked").json()["count"] == 0
    assert api_for(cast.member).get("/api/validator/decisions", status="bogus").status_code == 422


def test_authorize_runs_exactly_once(cast, api_for):
    decision_id = _blocked(cast, api_for)
    api = api_for(cast.member)
    first = api.post(f"/api/validator/decisions/{decision_id}/authorize")
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["status"] == "authorized" and body["resolved_by"] == cast.member.email
    assert body["execution_result"]["ok"] is True and body["executed_at"]
    second = api.post(f"/api/validator/decisions/{decision_id}/authorize")
    assert second.status_code == 409
    assert OutboxEntry.objects.filter(tool="send_email").count() == 1


@pytest.mark.parametrize("who", ["admin", "support", "other_admin", "superuser"])
def test_only_the_user_can_authorize(cast, api_for, who):
    decision_id = _blocked(cast, api_for)
    response = api_for(getattr(cast, who)).post(f"/api/validator/decisions/{decision_id}/authorize")
    assert response.status_code == 404  # another person's decision is absent, whoever asks
    assert Decision.objects.get(pk=decision_id).status == "blocked"
    assert OutboxEntry.objects.count() == 0


def test_dismiss(cast, api_for):
    decision_id = _blocked(cast, api_for)
    assert api_for(cast.member).post(f"/api/validator/decisions/{decision_id}/dismiss").json()["status"] == "dismissed"
    assert api_for(cast.member).post(f"/api/validator/decisions/{decision_id}/authorize").status_code == 409
    assert OutboxEntry.objects.count() == 0


def test_unauthenticated(client):
    assert client.post("/api/validator/check", {}, content_type="application/json").status_code == 401


def test_another_teams_id_and_wrong_types_are_4xx(cast, api_for):
    api = api_for(cast.member)
    body = {"history": [], "action": {**SEND, "justification": '"x"'}}
    assert api.post("/api/validator/check", {**body, "team_id": cast.other_team.pk}).status_code == 404
    assert api.post("/api/validator/check", {**body, "team_id": "acme"}).status_code == 422
    assert api.post("/api/validator/check", {**body, "action": {**SEND, "justification": 7}}).status_code == 422
    assert api.post("/api/validator/check", [1, 2]).status_code == 422
    assert api.post("/api/validator/decisions/999999/authorize").status_code == 404
    assert Decision.objects.count() == 0
