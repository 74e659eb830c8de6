"""Private stays private in every derived view (issue 29, part 3).

A unique marker is planted in every text field of every record a member's private world holds
(tests/canary.py `plant`: tasks, decisions, the outbox, scores and failures, drafts, pairs, the learner's
runs, proposals and comparisons, memory, hydration runs and items, texting and Slack messages, alerts);
the plant fails when a model that can hold such text got no row, so a new model cannot be forgotten.
Then every page (from the URL resolver) and every API GET (from the OpenAPI document), each path
parameter filled from the plant (a pattern left unfilled fails), is read as the team's admin, another
team's admin, support staff and a second member of the team: any marker found fails, naming the page
and the field, and so does a server error. The test of the test plants a leaking page and shows the
crawl names it.
"""

from __future__ import annotations

from django.test import override_settings

from tests.canary import crawl, plant
from tests.conftest import ApiClient, client_for
from tests.crawl import api_get_paths, page_paths
from tests.factories import member_of

ROLES = ["admin", "other_admin", "support", "second_member"]
# Shared by the member's own act, so their team's admin reads it: a decision the member proposed as
# an eval case (validator.EvalCandidate, source "user") is reviewed by the team's admins with its
# action and history (validator.permissions.reviewable_candidates). The analyst's candidates, made
# from tasks without the member asking, stay staff-only and are not excused.
# Support staff keep the opt-out register (channels_app.models.OptOut): who texted STOP, on which
# line, with which keyword, is theirs to read by law and design (never a message's body).
SHARED_WITH = {"admin": "validator.EvalCandidate.", "support": "channels_app.OptOut."}


def _excused(role: str, leak: str, fill: dict) -> bool:
    label = leak.split(": ", 1)[1]
    if label.startswith("server error"):
        return False
    prefix = SHARED_WITH.get(role)
    if not prefix or not label.startswith(prefix):
        return False
    return role != "admin" or label.endswith(f" #{fill['candidate_id']}")


def _clients(cast, role):
    user = member_of(cast.team, email="second@acme.example") if role == "second_member" else getattr(cast, role)
    return client_for(user), ApiClient(user).client


def test_the_member_and_staff_read_the_markers(cast):
    """The markers are really on the pages: the owner, and content staff on the analyst's pages, find
    them (else a clean crawl proves nothing), from every kind of record the plant covers."""
    canaries, fill = plant(cast)
    fields = set()
    for reader in (cast.member, cast.superuser):
        found, _ = crawl(client_for(reader), fill, canaries, api_client=ApiClient(reader).client)
        assert not [leak for leak in found if "server error" in leak], found
        fields |= {leak.split(": ", 1)[1].split(" #")[0] for leak in found}
    for expected in ("lindy.AgentTask.title", "lindy.TaskEvent.content", "drafting.Draft.body",
                     "drafting.Draft.inbound_subject", "memory.MemoryFile.content", "memory.MemoryFile.path",
                     "drafting.Proposal.diff", "hydration.Item.text", "hydration.Item.title", "hydration.Run.error",
                     "hydration.SourceState.last_error", "agent.OutboxEntry.arguments", "agent.OutboxEntry.error",
                     "validator.Decision.arguments", "validator.Decision.justification",
                     "analyst.FailureEvent.message", "analyst.TaskScore.summary", "analyst.TaskScore.error",
                     "validator.EvalCandidate.justification", "lindy.Meeting.notes"):
        assert expected in fields, (expected, sorted(fields))


def test_no_marker_reaches_a_role_that_may_not_read_it(cast):
    """One plant, read by each role in turn (planting once keeps the crawl within a minute on PG).
    No pattern is left out for want of an id: a new page's parameter must be filled from the plant."""
    canaries, fill = plant(cast)
    assert not page_paths(fill).unfilled, page_paths(fill).unfilled
    assert not api_get_paths(fill).unfilled, api_get_paths(fill).unfilled
    found = {}
    for role in ROLES:
        page, api = _clients(cast, role)
        leaks, visited = crawl(page, fill, canaries, api_client=api)
        assert len(visited) > 115
        found[role] = [leak for leak in leaks if not _excused(role, leak, fill)]
    assert not any(found.values()), "private fields read:\n" + "\n".join(
        f"{role} {leak}" for role, leaks in found.items() for leak in leaks[:40])


def test_the_crawl_catches_a_planted_leak(cast):
    """The test of the test: one page that prints the private task's title to anyone signed in."""
    canaries, fill = plant(cast)
    with override_settings(ROOT_URLCONF="tests.lindy.leaky_urls"):
        page, api = _clients(cast, "admin")
        leaks, _ = crawl(page, fill, canaries, api_client=api)
    assert any(leak.startswith(f"/leak/{fill['task_id']}/: lindy.AgentTask.title #") for leak in leaks), leaks
