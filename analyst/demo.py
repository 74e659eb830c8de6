"""Demo scores: the analyst scores the demo's finished agent tasks with the product's own code (the
offline rules without a model key). The scripted vendor payment is a rogue pattern: it becomes a
candidate eval case for a reviewer."""

from __future__ import annotations

from lindy.models import AgentTask

from . import services


def seed(ctx) -> None:
    for task_id in AgentTask.objects.filter(team__in=list(ctx.teams.values())).order_by("pk").values_list("pk", flat=True):
        services.task_score(task_id=task_id)


# --- Failures -----------------------------------------------------------------------------------
# The demo's failure groups come from running the product's own Gmail parsing on payloads that
# really break it, as a misbehaving provider would send them: a fake of the Gmail API (an httpx
# transport, so the real HTTP client reads them) answers messages.get with a malformed message.
# The failures are captured by lindy.failures like any other and contained here: the demo step
# itself succeeds.

DEMO_RUN = "demo: Gmail fetch"
MALFORMED = {
    # Headers as "Name: value" strings instead of {"name", "value"} objects.
    "m-headers": {"id": "m-headers", "internalDate": "1700000000000",
                  "payload": {"mimeType": "text/plain", "headers": ["From: billing@northwind.test", "Subject: Invoice"],
                              "body": {"data": "SGVsbG8"}}},
    # A part's body as a bare string instead of {"size", "data"}.
    "m-body": {"id": "m-body", "internalDate": "1700000000000",
               "payload": {"mimeType": "multipart/alternative", "headers": [{"name": "Subject", "value": "Hi"}],
                           "parts": [{"mimeType": "text/plain", "body": "SGVsbG8gdGhlcmU"}]}},
}
RUNS = [("user@acme.test", "m-headers"), ("sarah@acme.test", "m-headers"), ("user@acme.test", "m-headers"),
        ("admin@acme.test", "m-body")]


def _gmail_fake():
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        message_id = request.url.path.rsplit("/", 1)[-1]
        if message_id in MALFORMED:
            return httpx.Response(200, json=MALFORMED[message_id])
        return httpx.Response(404, json={"error": {"code": 404, "message": "Requested entity was not found."}})

    return httpx.Client(transport=httpx.MockTransport(answer), base_url="https://gmail.fake/gmail/v1/users/me/")


def _fetch_and_parse(http, message_id: str) -> None:
    from google_workspace import messages as gmail

    message = http.get(f"messages/{message_id}", params={"format": "full"}).json()
    payload = message.get("payload") or {}
    gmail.headers_of(payload)
    gmail.body_text(payload)


def seed_failures(ctx) -> None:
    from lindy import failures
    from lindy.demo import require

    from .failures import triage
    from .models import FailureEvent, FailureGroup

    if FailureEvent.objects.filter(run__startswith=DEMO_RUN).exists():
        return
    acme = ctx.teams["Acme"]
    with _gmail_fake() as http:
        for number, (email, message_id) in enumerate(RUNS, 1):
            user = ctx.users[email]
            log = [{"actor": "run", "name": DEMO_RUN, "text": f"fetch of {email}'s new mail (run {number})"},
                   {"actor": "source", "name": "gmail", "text": "messages.list: 1 new message"},
                   {"actor": "source", "name": "gmail", "text": f"messages.get {message_id} format=full: 200"}]
            try:
                with failures.capturing("hydration_source", route="hydration.gmail", target="Gmail API (fake)",
                                        run=f"{DEMO_RUN} {number}", user_id=user.pk, team_id=acme.pk, log=log):
                    _fetch_and_parse(http, message_id)
            except Exception:  # the failure is the demo's point: captured, and contained here
                continue
    groups = FailureGroup.objects.filter(events__run__startswith=DEMO_RUN).distinct()
    require("analyst", groups.count() == 2, f"the malformed Gmail payloads made {groups.count()} failure groups, not 2")
    for group in groups:
        triage.group_triage(group=group)
