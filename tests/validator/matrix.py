"""Blocked actions belong to the user they were taken for: only they see and authorize them
(a team admin of the same team gets 404, like anyone else). Team admins see statistics only."""

from tests.role_matrix import SUPERUSER_PAGE, TEAM_ADMIN_PAGE, Case, api, page
from tests.validator.test_views import blocked_payment


def sent_message(cast) -> int:
    """A message the assistant sent the member of the Acme team (recorded as sent)."""
    from agent.models import OutboxEntry

    return OutboxEntry.objects.create(team=cast.team, user=cast.member, tool="reply_to_user", adapter="user_channel",
                                      arguments={"body": "Done."}, status=OutboxEntry.Status.SENT).pk


def decision(cast) -> int:
    return blocked_payment(cast).pk


def authorized_decision(cast):
    from validator import services

    return services.decision_authorize(decision_id=blocked_payment(cast).pk, user=cast.member)


def candidate(cast) -> int:
    """A candidate case proposed by the member of the Acme team from their authorized decision."""
    from validator import eval_candidates

    return eval_candidates.candidate_propose(decision=authorized_decision(cast), user=cast.member, expected="allow").pk


CHECK_BODY = {
    "history": [{"actor": "user", "content": "Send the Q3 report to jane@initech.test"}],
    "action": {
        "tool": "send_email",
        "arguments": {"to": ["jane@initech.test"], "subject": "Q3 report", "body": "Attached."},
        "justification": 'The user said "Send the Q3 report to jane@initech.test"',
    },
}

CASES = [
    Case("validator/", "GET", "/validator/", page(200, support=404, superuser=404)),
    Case("validator/decisions/<int:decision_id>/", "GET", lambda c: f"/validator/decisions/{decision(c)}/", page(404, member=200)),
    Case("validator/decisions/<int:decision_id>/authorize/", "POST",
         lambda c: f"/validator/decisions/{decision(c)}/authorize/", page(404, member=302),
         body={"confirm": "yes"}, json=False),  # money moves: authorizing it is confirmed
    Case("validator/decisions/<int:decision_id>/dismiss/", "POST",
         lambda c: f"/validator/decisions/{decision(c)}/dismiss/", page(404, member=302), json=False),
    Case("validator/decisions/<int:decision_id>/follow/", "POST",
         lambda c: f"/validator/decisions/{decision(c)}/follow/", page(404, member=302), json=False),
    Case("validator/decisions/<int:decision_id>/propose-eval/", "POST",
         lambda c: f"/validator/decisions/{authorized_decision(c).pk}/propose-eval/", page(404, member=302),
         body={"expected": "allow"}, json=False),
    # Counts, never contents: a support user who administers a team sees them (not its decisions).
    Case("validator/stats/", "GET", "/validator/stats/",
         page(404, admin=200, outsider=200, support_admin=200, superuser=200)),
    # The eval matrix is for ops; candidates for staff and team admins (their own teams' only).
    Case("validator/evals/", "GET", "/validator/evals/", SUPERUSER_PAGE),
    Case("validator/cache/", "GET", "/validator/cache/", SUPERUSER_PAGE),
    Case("validator/evals/run/", "POST", "/validator/evals/run/", page(404, superuser=302),
         body={"offline_only": "1"}, json=False),
    # A candidate shows a decision's history and arguments: a support user who is also a team admin
    # reviews none (lindy.permissions.workspace_admin_team_ids).
    Case("validator/evals/candidates/", "GET", "/validator/evals/candidates/", {**TEAM_ADMIN_PAGE, "support_admin": 404}),
    Case("validator/evals/candidates/<int:candidate_id>/review/", "POST",
         lambda c: f"/validator/evals/candidates/{candidate(c)}/review/", page(404, admin=302, superuser=302, support_admin=404),
         body={"decision": "reject"}, json=False),
    Case("validator/outbox/", "GET", "/validator/outbox/", page(200, support=404, superuser=404)),
    # Another person's message is 404; for its owner a message that was never failed is refused with a message.
    Case("validator/outbox/<int:entry_id>/resend/", "POST", lambda c: f"/validator/outbox/{sent_message(c)}/resend/",
         page(404, member=302), json=False),
    Case("api/validator/check", "POST", "/api/validator/check", api(200, support=404, superuser=404), body=CHECK_BODY),
    Case("api/validator/decisions", "GET", "/api/validator/decisions?status=blocked", api(200)),
    Case("api/validator/outbox", "GET", "/api/validator/outbox?status=recorded", api(200)),
    Case("api/validator/decisions/<decision_id>", "GET", lambda c: f"/api/validator/decisions/{decision(c)}", api(404, member=200)),
    Case("api/validator/decisions/<decision_id>/authorize", "POST",
         lambda c: f"/api/validator/decisions/{decision(c)}/authorize", api(404, member=200)),
    Case("api/validator/decisions/<decision_id>/dismiss", "POST",
         lambda c: f"/api/validator/decisions/{decision(c)}/dismiss", api(404, member=200)),
]
