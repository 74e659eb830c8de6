"""The adaptive cadence (issue 15 part 6) and the learner's pages (parts 5 and 7): who sees what,
bad input, query bounds, pagination."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from drafting.learner import services
from drafting.models import LearnerRun, Proposal
from lindy import queue, schedules
from lindy.models import Membership
from tests.conftest import client_for
from tests.factories import TeamFactory, member_of

from .learner_helpers import STALE, SUBJECTS, carol_reply, drafted, paired, set_context

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(db):
    team = TeamFactory(name="Acme")
    umar = member_of(team, email="umar@acme.test", name="Umar Haddad")
    admin = member_of(team, Membership.Role.ADMIN, email="admin@acme.test")
    colleague = member_of(team, email="colleague@acme.test")
    other = member_of(TeamFactory(name="Globex"), Membership.Role.ADMIN, email="admin@globex.test")
    set_context(umar, STALE)
    return team, umar, admin, colleague, other


def _pairs(user, team, n):
    for i in range(n):
        draft = drafted(user, team, subject=SUBJECTS[i % len(SUBJECTS)])
        paired(draft, carol_reply(draft))


@override_settings(LINDY_LEARNER_PAIRS_PER_RUN=4, LINDY_LEARNER_FLOOR_HOURS=24, LINDY_LEARNER_MAX_RUNS_PER_DAY=2)
def test_cadence_fires_on_k_new_pairs_with_a_floor_and_a_ceiling(people):
    team, umar, *_ = people
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        _pairs(umar, team, 3)
        assert services.learner_due() == [(umar.pk, LearnerRun.Trigger.FLOOR)]  # never run: the floor
        services.learner_run(user=umar, trigger="floor")
        clock.shift(timedelta(hours=1))
        _pairs(umar, team, 3)
        assert services.learner_due() == []  # 3 new < K, and the last run is an hour old
        _pairs(umar, team, 1)
        assert services.learner_due() == [(umar.pk, LearnerRun.Trigger.CADENCE)]  # K reached
        services.learner_run(user=umar, trigger="cadence")
        clock.shift(timedelta(hours=1))
        _pairs(umar, team, 5)
        assert services.learner_due() == []  # the ceiling: 2 runs in 24 hours
        clock.shift(timedelta(hours=23))
        assert services.learner_due() == [(umar.pk, LearnerRun.Trigger.CADENCE)]
        queued = []
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(queue, "enqueue_or_log", lambda name, *args, **kw: queued.append((name, args)) or True)
            assert services.learner_cadence_dispatch() == [umar.pk]
        assert queued == [("drafting.tasks.learner_run", (umar.pk, "cadence"))]


def test_beat_checks_hourly():
    entry = next(e for e in schedules.registered() if e.name == "drafting.learner_cadence")
    assert entry.every_seconds == 3600 and entry.task == "drafting.tasks.learner_cadence"
    schedules.sync()
    assert PeriodicTask.objects.filter(name="drafting.learner_cadence").exists()


def test_pages_show_own_and_team_admins_proposals_only(people, django_assert_max_num_queries):
    team, umar, admin, colleague, other = people
    _pairs(umar, team, 12)
    run = services.learner_run(user=umar)
    proposal = run.proposals.get()
    for viewer in (umar, admin):
        with django_assert_max_num_queries(26):
            page = client_for(viewer).get("/drafting/learner/")
        assert page.status_code == 200 and f'data-proposal="{proposal.pk}"' in page.content.decode()
        detail = client_for(viewer).get(f"/drafting/learner/proposals/{proposal.pk}/")
        assert detail.status_code == 200
        body = detail.content.decode()
        assert 'data-outcome="win"' in body and "sign test" in body
        # The diff of the member's private drafting context is theirs: a team admin sees the
        # numbers, never the text (issue 29).
        assert ("Carol Reyes" in body) == (viewer == umar), viewer
    assert "data-revision" in client_for(umar).get(f"/drafting/learner/proposals/{proposal.pk}/").content.decode()
    # a member sees only their own; another team's admin sees nothing of it
    assert f'data-proposal="{proposal.pk}"' not in client_for(colleague).get("/drafting/learner/").content.decode()
    assert client_for(colleague).get(f"/drafting/learner/proposals/{proposal.pk}/").status_code == 404
    assert client_for(other).get(f"/drafting/learner/proposals/{proposal.pk}/").status_code == 404
    assert "offline-rules" not in client_for(other).get("/drafting/learner/judge/").content.decode()
    audit = client_for(admin).get("/drafting/learner/judge/")
    assert audit.status_code == 200 and 'data-target="offline-rules"' in audit.content.decode()


def test_bad_input_is_a_clear_4xx_or_ignored(people):
    team, umar, *_ = people
    client = client_for(umar)
    assert client.get("/drafting/learner/proposals/999999/").status_code == 404
    assert client.get("/drafting/learner/?status=<script>&page=abc").status_code == 200
    assert client.get("/drafting/learner/?page=-5").status_code == 200
    assert client_for(member_of(TeamFactory(), email="x@y.test")).get("/drafting/learner/").status_code == 200


def test_the_list_is_paginated(people):
    team, umar, *_ = people
    now = timezone.now()
    Proposal.objects.bulk_create([Proposal(user=umar, team=team, summary=f"p{i}", status=Proposal.Status.REJECTED,
                                           created_at=now - timedelta(minutes=i)) for i in range(45)])
    client = client_for(umar)
    first = client.get("/drafting/learner/").content.decode()
    assert first.count("data-proposal=") == 20 and "Page 1 of 3" in first
    third = client.get("/drafting/learner/?page=3", HTTP_HX_REQUEST="true").content.decode()
    assert third.count("data-proposal=") == 5 and "<html" not in third


def test_run_learner_command_prints_the_outcome(people):
    import io

    from django.core.management import call_command

    team, umar, *_ = people
    _pairs(umar, team, 12)
    out = io.StringIO()
    call_command("run_learner", user="umar@acme.test", stdout=out)
    text = out.getvalue()
    assert "Edit accepted" in text and "wins" in text and "+- Carol Reyes" in text


def test_the_proposal_list_reads_no_hidden_text_per_row(people, django_assert_num_queries):
    """A team admin's list of a member's proposals: each row's private text is hidden without being
    read, so the page costs the same for 1 proposal as for 12 (it once cost 3 queries a row)."""
    team, umar, admin, *_ = people
    Proposal.objects.create(user=umar, team=team, created_at=timezone.now(), base_context="old", proposed_context="new", diff="-old\n+new")
    client = client_for(admin)
    client.get("/drafting/learner/")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as one:
        assert client.get("/drafting/learner/").status_code == 200
    for _ in range(11):
        Proposal.objects.create(user=umar, team=team, created_at=timezone.now(), base_context="old", proposed_context="new", diff="-old\n+new")
    with django_assert_num_queries(len(one)):
        page = client.get("/drafting/learner/").content.decode()
    assert page.count("data-proposal=") == 12 and "-old" not in page
