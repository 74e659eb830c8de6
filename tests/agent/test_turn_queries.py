"""An agent turn's queries do not grow with the user's memory (issue 31 part 4): a turn with a
validated action over a memory of 300 index lines costs the same statements as over a few, so
a regression to a query per memory line (blame, the validator's evidence) or per tool fails here,
whatever the machine's load. `make bench` reports the turn's CPU."""

import pytest

from agent import services as agent_services
from lindy import services as core
from lindy.models import TaskEvent
from memory import services as memory_services
from memory.services import Change
from tests.factories import TeamFactory, member_of
from tests.validator.helpers import RECORDER, SENT
from validator.models import Decision

pytestmark = pytest.mark.django_db

# 76 on SQLite today, with the resumable turn's lookups (issue 30: the agent resumes a killed turn
# from its last step, and a user message carries its execution key). A query per memory line would
# add 300 over the 300-line case: the bound stays far below that.
MAX_QUERIES = 85


def _memory(user, lines):
    fs = memory_services.filesystem_for_user(user)
    paths = [f"notes/note-{n:03d}.md" for n in range(lines)]
    memory_services.changes_apply(
        filesystem=fs, author_kind="system", message="Set up",
        changes=[Change("create", p, content=f"# Note {n}\n") for n, p in enumerate(paths)]
        + [Change("write", "index.md", content="# Index\n\n" + "".join(f"- [{p}]({p})\n" for p in paths))])


@pytest.mark.parametrize("lines", [3, 300])
def test_a_validated_turn_costs_a_bounded_number_of_queries(lines, seam, django_assert_max_num_queries):
    seam.user_message_sender = RECORDER
    SENT.clear()
    team = TeamFactory()
    user = member_of(team)
    _memory(user, lines)
    task = core.task_create(team=team, owner=user, title="Turn")
    core.task_event_add(task=task, actor=TaskEvent.Actor.USER,
                        content="Send an email to jane@initech.test saying the contract is signed.")
    with django_assert_max_num_queries(MAX_QUERIES):
        assert agent_services.agent_run(task_id=task.pk) == "done"
    assert Decision.objects.get(task=task).status == Decision.Status.EXECUTED
    assert len(SENT) == 1
