"""Private stays private in every derived view (issue 29, part 3).

A unique marker is planted in every text field of a member's private records: a private task with
its events and error, a blocked decision and an eval candidate made from it, the analyst's score,
drafts and draft-sent pairs, a learner proposal with its diff and context documents, the member's
memory and its revisions, a private meeting. Then every page (from the URL resolver) and every API
GET (from the OpenAPI document) is read as the team's admin, another team's admin, support staff and
a second member of the team: any marker found fails, naming the page and the field. The test of the
test plants a leaking page and shows the crawl names it.
"""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils import timezone

from analyst.models import TaskScore
from drafting.models import Proposal
from lindy.models import AgentTask
from memory import services as memory_services
from tests.canary import Canaries, crawl, high_water, stamp_new_rows
from tests.conftest import ApiClient, client_for
from tests.factories import MeetingFactory, member_of
from tests.memory.factories import write_linked

ROLES = ["admin", "other_admin", "support", "second_member"]
# Shared by the member's own act, so their team's admin reads it: a decision the member proposed as
# an eval case (validator.EvalCandidate, source "user") is reviewed by the team's admins with its
# action and history (validator.permissions.reviewable_candidates). The analyst's candidates, made
# from tasks without the member asking, stay staff-only and are not excused.
SHARED_WITH = {"admin": ("validator.EvalCandidate.",)}


def plant(cast) -> tuple[Canaries, dict]:
    """The member's private world, every text field stamped; returns the markers and the path values."""
    from tests.drafting.factories import draft, pair
    from tests.validator.test_views import blocked_payment
    from validator import eval_candidates
    from validator import services as validator_services

    since = high_water()
    decision = blocked_payment(cast)
    task = decision.task
    AgentTask.objects.filter(pk=task.pk).update(visibility="private")
    authorized = validator_services.decision_authorize(decision_id=blocked_payment(cast).pk, user=cast.member)
    candidate = eval_candidates.candidate_propose(decision=authorized, user=cast.member, expected="allow")
    TaskScore.objects.create(team=cast.team, task=task, from_seq=1, through_seq=2, score=0.4, did_what_asked=0.5,
                             summary="It paid.", error="The analyst call failed.", blocked_reasons=["paid"],
                             false_claims=["said it paid"])
    mail = draft(cast.member, cast.team)
    sent = pair(cast.member, cast.team, sent="Hi Jane,\n\nFriday is fine.\n\nThanks")
    proposal = Proposal.objects.create(user=cast.member, team=cast.team, created_at=timezone.now(),
                                       base_context="old", proposed_context="new", diff="-old\n+new", summary="s",
                                       decision_reason="r")
    proposal.proposed_from.add(sent)
    fs = memory_services.filesystem_for_user(cast.member)
    revision = write_linked(fs, {"people/secret.md": "A private note.\n"}, author=cast.member, author_kind="person")
    meeting = MeetingFactory(team=cast.team, owner=cast.member, public=False)
    canaries = Canaries()
    stamp_new_rows(since, canaries)
    fill = {"task_id": task.pk, "decision_id": decision.pk, "candidate_id": candidate.pk, "draft_id": mail.pk,
            "proposal_id": proposal.pk, "fs_id": fs.pk, "path": "people/secret.md", "revision_id": revision.pk,
            "meeting_id": meeting.pk, "pair_id": sent.pk, "name": "validator", "source": "gmail",
            "change_id": revision.changes.values_list("pk", flat=True).first()}
    return canaries, fill


def _clients(cast, role):
    user = member_of(cast.team, email="second@acme.example") if role == "second_member" else getattr(cast, role)
    return client_for(user), ApiClient(user).client


def test_the_member_reads_their_own_markers(cast):
    """The markers are really on the pages: the owner finds them (else a clean crawl proves nothing)."""
    canaries, fill = plant(cast)
    page, api = client_for(cast.member), ApiClient(cast.member).client
    found, _ = crawl(page, fill, canaries, api_client=api)
    fields = {leak.split(": ", 1)[1].split(" #")[0] for leak in found}
    for expected in ("lindy.AgentTask.title", "lindy.TaskEvent.content", "drafting.Draft.body",
                     "memory.MemoryFile.content", "drafting.Proposal.diff"):
        assert expected in fields, (expected, sorted(fields))


@pytest.mark.parametrize("role", ROLES)
def test_no_marker_reaches_a_role_that_may_not_read_it(cast, role):
    canaries, fill = plant(cast)
    page, api = _clients(cast, role)
    leaks, visited = crawl(page, fill, canaries, api_client=api)
    leaks = [leak for leak in leaks if not leak.split(": ", 1)[1].startswith(SHARED_WITH.get(role, ("-",)))]
    assert len(visited) > 80
    assert not leaks, f"{role} read private fields:\n" + "\n".join(leaks[:40])


def test_the_crawl_catches_a_planted_leak(cast):
    """The test of the test: one page that prints the private task's title to anyone signed in."""
    canaries, fill = plant(cast)
    with override_settings(ROOT_URLCONF="tests.lindy.leaky_urls"):
        page, api = _clients(cast, "admin")
        leaks, _ = crawl(page, fill, canaries, api_client=api)
    assert any(leak.startswith(f"/leak/{fill['task_id']}/: lindy.AgentTask.title #") for leak in leaks), leaks
