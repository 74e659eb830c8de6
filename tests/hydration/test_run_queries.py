"""A hydration run's queries do not grow with its items (issue 31 part 4): 100 new items cost the
same statements as a handful, so a regression to a query per item (or per fact, per citation, per
file written) fails here, whatever the machine's load. `make bench` reports the run's CPU."""

import pytest
from django.utils import timezone

from hydration import services
from hydration.models import FileSource, Item, Run
from lindy import services as core
from memory import services as memory_services
from memory.services import Change
from tests.factories import TeamFactory, member_of

pytestmark = pytest.mark.django_db

# 52 on PostgreSQL today (in-place progress writes included: a test runs inside a transaction, so
# there is no heartbeat thread), a few more on SQLite (portable bulk inserts): a margin, not a per-item cost.
MAX_QUERIES = 60


def _meetings(team, user, n, tag):
    for i in range(n):
        core.meeting_create(team=team, owner=user, title=f"{tag} sync {i}", occurred_at=timezone.now(),
                            notes=f"We always check item {tag}-{i} before release. Jane Park joined Initech as CTO {i}.")


def test_a_100_item_run_costs_a_bounded_number_of_queries(django_assert_max_num_queries):
    team = TeamFactory()
    user = member_of(team)
    fs = memory_services.filesystem_for_user(user)
    paths = [f"people/person-{n:03d}.md" for n in range(60)]
    memory_services.changes_apply(
        filesystem=fs, author_kind="system", message="Set up",
        changes=[Change("create", p, content=f"# Person {n}\n\nWorks at Initech.\n") for n, p in enumerate(paths)]
        + [Change("write", "index.md", content="# Index\n\n" + "".join(f"- [{p}]({p})\n" for p in paths))])
    _meetings(team, user, 3, "warm")  # the first run creates the sources' rows
    assert services.run_now_sync(filesystem=fs, trigger="manual").status == Run.Status.SUCCEEDED
    _meetings(team, user, 100, "new")
    with django_assert_max_num_queries(MAX_QUERIES):
        run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert (run.status, run.item_count) == (Run.Status.SUCCEEDED, 100), run.agent_message
    assert Item.objects.filter(fetched_by=run).count() == 100
    assert Item.objects.filter(processed_by=run).count() == 100
    assert run.fact_count >= 100 and run.revision is not None
    assert FileSource.objects.filter(run=run).count() >= 100
