"""Pages, API, manage.py hydrate and the schedule, with the permission rules."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from hydration import services, tasks
from hydration.models import Item, Run, Schedule, SourceState
from lindy import schedules
from lindy import services as core
from memory.models import FileSystem
from tests.conftest import client_for

from .helpers import channel, installation, share, team_fs, user_fs

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(monkeypatch):
    sent = []
    monkeypatch.setattr(tasks.hydrate, "apply_async", lambda args=(), kwargs=None, **_: sent.append(args[0]))
    return sent


def _meeting(cast, **kwargs):
    defaults = {"team": cast.team, "owner": cast.member, "title": "Sync", "occurred_at": timezone.now(),
                # Attributed to the member: meeting notes are the user's words only on their own lines.
                "notes": f"{cast.member.display_name}: We always deploy to staging before prod. "
                         "Jane Park joined as our CTO."}
    return core.meeting_create(**{**defaults, **kwargs})


def test_nav_and_home_show_own_and_team_memory(cast):
    page = client_for(cast.member).get("/hydration/")
    body = page.content.decode()
    assert page.status_code == 200 and 'data-nav="hydration"' in body
    assert f'data-fs="{user_fs(cast.member).pk}"' in body and f'data-fs="{team_fs(cast.team).pk}"' in body
    assert f'data-fs="{team_fs(cast.other_team).pk}"' not in body
    assert client_for(cast.support).get("/hydration/").status_code == 404
    assert 'data-nav="hydration"' not in client_for(cast.support).get("/").content.decode()


def test_another_teams_memory_and_runs_are_404(cast):
    other_fs = team_fs(cast.other_team)
    run = services.run_now_sync(filesystem=other_fs, trigger="manual")
    client = client_for(cast.member)
    assert client.get(f"/hydration/{other_fs.pk}/").status_code == 404
    assert client.get(f"/hydration/runs/{run.pk}/").status_code == 404
    assert client.post(f"/hydration/{other_fs.pk}/run").status_code == 404
    assert client.get(f"/hydration/{user_fs(cast.admin).pk}/").status_code == 404
    assert not Run.objects.filter(filesystem=other_fs).exclude(pk=run.pk).exists()


def test_run_now_permissions_and_progress(cast, enqueued, django_capture_on_commit_callbacks):
    member = client_for(cast.member)
    own = user_fs(cast.member)
    with django_capture_on_commit_callbacks(execute=True):
        response = member.post(f"/hydration/{own.pk}/run")
    run = Run.objects.get(filesystem=own)
    assert response.status_code == 302 and response["Location"] == f"/hydration/runs/{run.pk}/"
    assert enqueued == [run.pk] and run.status == "queued" and run.triggered_by == cast.member
    # Pressing again while it is live starts nothing new.
    with django_capture_on_commit_callbacks(execute=True):
        member.post(f"/hydration/{own.pk}/run")
    assert Run.objects.filter(filesystem=own).count() == 1 and enqueued == [run.pk]
    # The progress partial polls while the run is live.
    partial = member.get(f"/hydration/runs/{run.pk}/?part=progress", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="progress"' in partial and 'hx-trigger="every 2s"' in partial and "<html" not in partial
    # Members may not run the team's memory; its admins may.
    team = team_fs(cast.team)
    assert member.post(f"/hydration/{team.pk}/run").status_code == 403
    assert client_for(cast.admin).post(f"/hydration/{team.pk}/run").status_code == 302
    services.run_execute(run_id=run.pk)
    partial = member.get(f"/hydration/runs/{run.pk}/?part=progress", HTTP_HX_REQUEST="true").content.decode()
    assert "every 2s" not in partial and "Nothing new" in partial


def test_sources_page_configures_sources(cast):
    fs = user_fs(cast.member)
    inst = installation(cast.team)
    share(channel(cast.team, inst, "C0LEAD", "leadership", private=True), cast.member)
    channel(cast.team, inst, "C0GEN", "general", team_memory=True)
    client = client_for(cast.member)
    page = client.get(f"/hydration/{fs.pk}/").content.decode()
    slack_row = page.split('data-source="slack"')[1].split("</tr>")[0]
    assert "#leadership" in slack_row and "#general" not in slack_row
    team_page = client.get(f"/hydration/{team_fs(cast.team).pk}/").content.decode()
    assert "#general" in team_page.split('data-source="slack"')[1].split("</tr>")[0]
    for kind in ("slack", "gmail", "meetings", "tasks"):
        assert f'data-source="{kind}"' in page
    assert "Not connected." in page  # Gmail
    response = client.post(f"/hydration/{fs.pk}/sources/meetings", {"enabled": "off"})
    assert response.status_code == 302
    assert SourceState.objects.get(filesystem=fs, source="meetings").enabled is False
    _meeting(cast)
    run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.sources["meetings"] == {"status": "off", "items": 0}
    assert not Item.objects.filter(filesystem=fs, source="meetings").exists()
    assert client.post(f"/hydration/{fs.pk}/sources/nonsense", {"enabled": "on"}).status_code == 404
    assert client.get(f"/hydration/{fs.pk}/sources/meetings").status_code == 405
    team = team_fs(cast.team)
    services.source_states_ensure(filesystem=team)
    assert client_for(cast.admin).post(f"/hydration/{team.pk}/sources/gmail", {"enabled": "on"}).status_code == 404
    assert client.post(f"/hydration/{team.pk}/sources/meetings", {"enabled": "off"}).status_code == 403
    assert SourceState.objects.get(filesystem=team, source="meetings").enabled is True


def test_runs_page_diff_and_provenance(cast):
    fs = user_fs(cast.member)
    meeting = _meeting(cast)
    run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.status == "succeeded"
    client = client_for(cast.member)
    listing = client.get(f"/hydration/{fs.pk}/").content.decode()
    assert f'data-run="{run.pk}"' in listing and f"r{run.revision_id}" in listing and "meetings: 1" in listing
    detail = client.get(f"/hydration/runs/{run.pk}/").content.decode()
    assert 'data-change="procedures.md"' in detail and "+- We always deploy to staging before prod." in detail
    assert f'href="/meetings/{meeting.pk}/"' in detail and "procedural" in detail
    why = client.get(f"/hydration/{fs.pk}/revisions/{run.revision_id}/why").content.decode()
    assert 'data-file="procedures.md"' in why and f'href="/meetings/{meeting.pk}/"' in why
    # Line by line: the procedures line leads back to the meeting.
    blame = client.get(f"/hydration/{fs.pk}/why/procedures.md").content.decode()
    line_no = next(n for n, line in enumerate(
        fs.files.get(path="procedures.md").content.splitlines(), start=1) if "staging" in line)
    chosen = client.get(f"/hydration/{fs.pk}/why/procedures.md", {"line": line_no}).content.decode()
    assert f"run {run.pk}" in blame
    assert f'data-chosen-line="{line_no}"' in chosen and f'href="/meetings/{meeting.pk}/"' in chosen
    # A revision made by a person has no source items.
    person = fs.revisions.filter(author_kind="system").first()
    assert "data-no-run" in client.get(f"/hydration/{fs.pk}/revisions/{person.pk}/why").content.decode()
    assert client.get(f"/hydration/{fs.pk}/why/nope.md").status_code == 404
    assert client.get(f"/hydration/{fs.pk}/why/procedures.md", {"line": "x"}).status_code == 200


def test_item_text_is_escaped_and_only_web_links_open_outside(cast):
    fs = user_fs(cast.member)
    _meeting(cast, notes="We always check <script>alert(1)</script> inputs before prod.")
    run = services.run_now_sync(filesystem=fs, trigger="manual")
    body = client_for(cast.member).get(f"/hydration/runs/{run.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body


def test_runs_page_query_count_is_bounded(cast, django_assert_max_num_queries):
    fs = team_fs(cast.team)
    for _ in range(30):
        Run.objects.create(filesystem=fs, trigger="schedule", status="no_changes",
                           sources={"meetings": {"status": "ok", "items": 0}})
    client = client_for(cast.admin)
    with django_assert_max_num_queries(25):
        assert client.get(f"/hydration/{fs.pk}/").status_code == 200
    with django_assert_max_num_queries(25):
        assert client.get(f"/hydration/{fs.pk}/?page=2", HTTP_HX_REQUEST="true").status_code == 200


def test_api(cast, api_for, enqueued, django_capture_on_commit_callbacks):
    api = api_for(cast.member)
    fs = user_fs(cast.member)
    sources = api.get(f"/api/hydration/filesystems/{fs.pk}/sources").json()
    assert {s["source"] for s in sources} == {"slack", "gmail", "meetings", "tasks"}
    assert all("token" not in str(s).lower() for s in sources)
    response = api.put(f"/api/hydration/filesystems/{fs.pk}/sources/tasks", {"enabled": False})
    assert response.status_code == 200 and response.json()["enabled"] is False
    assert api.put(f"/api/hydration/filesystems/{fs.pk}/sources/tasks", raw="{bad").status_code == 400
    assert api.put(f"/api/hydration/filesystems/{fs.pk}/sources/tasks", {"enabled": "maybe"}).status_code == 422
    assert api.put(f"/api/hydration/filesystems/{fs.pk}/sources/nope", {"enabled": True}).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post(f"/api/hydration/filesystems/{fs.pk}/runs")
        second = api.post(f"/api/hydration/filesystems/{fs.pk}/runs")
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["run"]["id"] == second.json()["run"]["id"] and second.json()["created"] is False
    run_id = first.json()["run"]["id"]
    _meeting(cast)
    services.run_execute(run_id=run_id)
    got = api.get(f"/api/hydration/runs/{run_id}").json()
    assert got["status"] == "succeeded" and got["revision_id"]
    items = api.get(f"/api/hydration/runs/{run_id}/items").json()
    assert [i["source"] for i in items] == ["meetings"]
    assert api.get(f"/api/hydration/runs/{run_id}/items", limit=0).status_code == 422
    assert api.get(f"/api/hydration/filesystems/{fs.pk}/runs").json()[0]["id"] == run_id
    # Another team's admin sees none of it; a member may not run the team's memory.
    other = api_for(cast.other_admin)
    assert other.get(f"/api/hydration/runs/{run_id}").status_code == 404
    assert other.get(f"/api/hydration/filesystems/{fs.pk}/sources").status_code == 404
    assert api.post(f"/api/hydration/filesystems/{team_fs(cast.team).pk}/runs").status_code == 403
    assert api_for(cast.support).get(f"/api/hydration/runs/{run_id}").status_code == 404


def test_manage_py_hydrate_prints_the_summary(cast):
    _meeting(cast)
    out = StringIO()
    call_command("hydrate", user=cast.member.email, stdout=out)
    text = out.getvalue()
    run = Run.objects.get(filesystem=user_fs(cast.member))
    assert f"Run {run.pk} for user:{cast.member.email}: Succeeded" in text
    assert "meetings  ok" in text and "1 new item(s)" in text
    assert f"Revision: r{run.revision_id}" in text and "Violations: none" in text
    assert "tokens:" in text and "cost: $" in text
    out = StringIO()
    call_command("hydrate", team="Acme", stdout=out)
    assert "Run" in out.getvalue() and "team:Acme" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("hydrate", team="Nope")
    with pytest.raises(CommandError):
        call_command("hydrate", user="nobody@x.test")


def test_schedule_spreads_runs_and_never_doubles(cast, enqueued):
    assert "hydration.dispatch_due" in {e.name for e in schedules.registered()}
    now = timezone.now()
    assert services.schedule_dispatch(now=now) == []  # every file system got its slot when created
    slots = list(Schedule.objects.values_list("next_run_at", flat=True))
    assert len(slots) == FileSystem.objects.count()
    interval = timedelta(hours=12)
    assert all(now < slot <= now + interval for slot in slots)
    assert len({slot.replace(microsecond=0) for slot in slots}) == len(slots)  # spread, not all at once
    first_due = min(slots)
    due_now = services.schedule_dispatch(now=first_due)
    assert len(due_now) == 1
    assert services.schedule_dispatch(now=first_due) == []  # already claimed
    # A full interval later every file system has run once.
    created = services.schedule_dispatch(now=now + interval)
    assert len(created) + len(due_now) == FileSystem.objects.count()
    assert Run.objects.filter(trigger="schedule").count() == FileSystem.objects.count()
    # The next slot is 12 hours on; a still-live run is not started twice.
    schedule = Schedule.objects.get(filesystem=Run.objects.get(pk=due_now[0]).filesystem)
    assert schedule.next_run_at == first_due + interval
    assert services.schedule_dispatch(now=first_due + interval) == []
    assert Run.objects.filter(filesystem=schedule.filesystem).count() == 1


def test_run_and_provenance_pages_cost_the_same_queries_for_few_or_many_items(cast):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from lindy.models import Team

    people = ["Jane Park", "Omar Diaz", "Lena Berg", "Ravi Shah", "Mia Chen", "Tom Hale", "Ada Kim", "Ben Ito"]
    counts = []
    for size, name in ((2, "Few"), (8, "Many")):
        team = Team.objects.create(name=name)
        cast.admin.memberships.create(team=team, role="admin")
        for n in range(size):
            core.meeting_create(team=team, owner=cast.admin, title=f"Sync {n}", occurred_at=timezone.now(),
                                public=True,
                                notes=f"We always review contract {n} before signing. {people[n]} joined as our CTO.")
        fs = team_fs(team)
        run = services.run_now_sync(filesystem=fs, trigger="manual")
        assert run.status == "succeeded" and run.item_count == size
        path = "procedures.md" if fs.files.filter(path="procedures.md").exists() else "index.md"
        client = client_for(cast.admin)
        measured = {}
        for label, url in (("run", f"/hydration/runs/{run.pk}/"),
                           ("split", f"/hydration/runs/{run.pk}/?view=split"),
                           ("why-revision", f"/hydration/{fs.pk}/revisions/{run.revision_id}/why"),
                           ("why-file", f"/hydration/{fs.pk}/why/{path}?line=2"),
                           ("sources", f"/hydration/{fs.pk}/")):
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200, url
            measured[label] = len(captured)
        counts.append(measured)
    assert counts[0] == counts[1], counts
