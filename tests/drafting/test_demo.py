"""The demo's drafting share (issue 34 part 1): two weeks of email drafted, sent, paired and learned
from by the product's own code (drafting/demo.py), so a fresh demo's drafts page lists drafts, its
chart shows the heavy-edit rate by day, and the learner page lists accepted and rejected proposals;
what the pages show is recounted from the records, and the recount catches a tampered record."""

from __future__ import annotations

import pytest

from agent.models import OutboxEntry
from drafting import demo as drafting_demo
from drafting.models import Draft, DraftPair, Proposal
from google_workspace.models import GmailAccount
from hydration.models import Item
from lindy import demo
from router.models import ModelCall
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_the_demo_drafts_pairs_and_learns_through_the_product_and_the_recount_agrees(seeded_demo):
    """One seed (it is two simulated weeks), read four ways."""
    seeded = seeded_demo
    _pages_show_drafts_a_daily_heavy_edit_chart_and_decided_proposals(seeded)
    _what_the_demo_shows_is_what_the_product_did(seeded)
    _a_second_seed_changes_nothing()
    _the_recount_catches_a_tampered_record(seeded)


def _pages_show_drafts_a_daily_heavy_edit_chart_and_decided_proposals(seeded):
    umar, ada = seeded.users["user@acme.test"], seeded.users["admin@acme.test"]
    client = client_for(umar)
    page = client.get("/drafting/").content.decode()
    assert "No drafts yet" not in page
    drafted = Draft.objects.filter(user=umar, status__in=[Draft.Status.SAVED, Draft.Status.RECORDED])
    assert drafted.count() >= 20 and drafted.latest("created_at").inbound_subject in page

    chart = client.get("/api/drafting/charts", {"days": 30, "period": "day"}).json()["heavy_edit"]
    daily = [sum(s["scorable"][i] for s in chart["series"]) for i in range(len(chart["periods"]))]
    assert len(chart["periods"]) >= 10 and all(n > 0 for n in daily)
    assert all(r is not None for s in chart["series"] for r, n in zip(s["rate"], s["scorable"], strict=True) if n)
    assert client.get("/drafting/charts/").status_code == 200
    # The team's chart (its admin's): the learner catches up with the people, so the heavy-edit rate
    # of the last 3 days is at most half the first 3 days' (as learner_simulate's test asks).
    team = client_for(ada).get("/api/drafting/charts", {"days": 30, "team": seeded.teams["Acme"].pk}).json()
    heavy, scorable = ([sum(s[key][i] for s in team["heavy_edit"]["series"])
                        for i in range(len(team["heavy_edit"]["periods"]))] for key in ("heavy", "scorable"))
    first, last = sum(heavy[:3]) / sum(scorable[:3]), sum(heavy[-3:]) / sum(scorable[-3:])
    assert len(heavy) == drafting_demo.DAYS and last <= first / 2, (heavy, scorable)

    # The team admin's learner page lists the team's proposals, accepted and rejected among them.
    learner = client_for(ada).get("/drafting/learner/").content.decode()
    assert 'data-status="accepted"' in learner and 'data-status="rejected"' in learner
    assert 'data-status="accepted"' in client.get("/drafting/learner/").content.decode()


def _what_the_demo_shows_is_what_the_product_did(seeded):
    users = [seeded.users[e] for e in drafting_demo.EMAILS]
    # Every draft came from an email hydration stored from Gmail, was asked of the router and saved
    # through the outbox; every pair from a sent email Gmail filed as the user's.
    drafts = Draft.objects.filter(user__in=users)
    assert drafts.exists() and not drafts.filter(item__isnull=True).exists()
    drafted = drafts.filter(status__in=[Draft.Status.SAVED, Draft.Status.RECORDED])
    assert not drafted.filter(model_call__isnull=True).exists()
    assert OutboxEntry.objects.filter(tool="draft_email", user__in=users).count() == drafted.count()
    assert ModelCall.objects.filter(pk__in=drafted.values("model_call_id"), route="email.draft").count() \
        == drafted.count()
    pairs = DraftPair.objects.filter(user__in=users)
    assert pairs.count() == drafted.count()
    assert not pairs.exclude(sent_item__author_kind=Item.AuthorKind.OWNER).exists()
    assert drafts.filter(status=Draft.Status.SKIPPED).exists()  # the newsletters: the rules said no
    decided = Proposal.objects.filter(user__in=users, status__in=[Proposal.Status.ACCEPTED, Proposal.Status.REJECTED])
    assert all(p.comparisons.exists() for p in decided)
    # Nothing stays connected to the local fake.
    assert not GmailAccount.objects.filter(user__in=users, status=GmailAccount.Status.CONNECTED).exists()
    assert drafting_demo.demo_check(users=users) == []


def _the_recount_catches_a_tampered_record(seeded):
    users = [seeded.users[e] for e in drafting_demo.EMAILS]
    pair = DraftPair.objects.filter(user=users[0], scorable=True).order_by("pk").first()
    DraftPair.objects.filter(pk=pair.pk).update(heavy_edit=not pair.heavy_edit)
    problems = drafting_demo.demo_check(users=users)
    assert len(problems) == 1 and "user@acme.test's chart shows" in problems[0]

    DraftPair.objects.filter(pk=pair.pk).update(heavy_edit=pair.heavy_edit)
    assert drafting_demo.demo_check(users=users) == []
    proposal = Proposal.objects.filter(user__in=users, status=Proposal.Status.REJECTED).first()
    Proposal.objects.filter(pk=proposal.pk).update(status=Proposal.Status.ACCEPTED)
    [problem] = drafting_demo.demo_check(users=users)
    assert f"proposal {proposal.pk} is accepted" in problem
    # seed_demo runs the check on every seed, and fails loudly.
    with pytest.raises(demo.DemoFailed, match=f"drafting: what the pages show differs .*proposal {proposal.pk}"):
        demo.seed()


def _a_second_seed_changes_nothing():
    counts = (Draft.objects.count(), DraftPair.objects.count(), Proposal.objects.count(), Item.objects.count(),
              ModelCall.objects.count())
    demo.seed()
    assert (Draft.objects.count(), DraftPair.objects.count(), Proposal.objects.count(), Item.objects.count(),
            ModelCall.objects.count()) == counts
