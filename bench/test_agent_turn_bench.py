"""`make bench`: an agent turn's CPU outside the model (issue 31 part 4).

A turn is what a worker does for `agent.tasks.agent_run` on a task with a new message from its
user: the loop (agent.loop) with the user's memory context (a 500-file memory), the validator
judging the proposed action, the tool executing into the outbox, the reply to the user. The user
asks for an email to be sent, so every part of the turn runs; a plain question (the throughput
bench's turn: one exempt reply) is an info line. Model time is excluded as in the hydration bench
(bench/outside_model.py); each figure is the median of RUNS turns, after one that warms caches.
Its queries are in the note (tests/agent/test_turn_queries.py bounds them)."""

from __future__ import annotations

import memory_bench
import outside_model
import pytest
from ratios import record_absolute

FILES = 500
RUNS = 7
CPU_GOAL_MS = 60.0
SEND = "Send an email to jane@initech.test saying the contract is signed."
PLAIN = "What is on my plate today?"


@pytest.mark.django_db
def test_agent_turn_cpu(monkeypatch, seam):
    from agent import services as agent_services
    from lindy import services as core
    from lindy.models import TaskEvent
    from tests.validator.helpers import RECORDER
    from validator.models import Decision

    seam.user_message_sender = RECORDER
    _, user, _ = memory_bench.personal(FILES)
    team = user.memberships.get().team
    clock = outside_model.ModelClock(monkeypatch)

    def turn(text: str, n: int) -> outside_model.Sample:
        task = core.task_create(team=team, owner=user, title=f"Turn {n}")
        core.task_event_add(task=task, actor=TaskEvent.Actor.USER, content=text)
        sample, stopped = outside_model.measure(clock, lambda: agent_services.agent_run(task_id=task.pk),
                                                label=f"agent turn {n}: {text}")
        assert stopped == "done", stopped
        if text == SEND:
            assert Decision.objects.get(task=task).status == Decision.Status.EXECUTED
        return sample

    turn(SEND, 0), turn(PLAIN, 0)  # warm templates, prompts and caches, as on a live worker
    sends = outside_model.median([turn(SEND, n) for n in range(1, RUNS + 1)])
    plain = outside_model.median([turn(PLAIN, n) for n in range(1, RUNS + 1)])
    print(f"\ninfo: agent turn answering a plain question: {plain.cpu_ms:.0f} ms CPU outside the model "
          f"({outside_model.describe(plain, RUNS)})")
    record_absolute("agent turn CPU outside the model", sends.cpu_ms, CPU_GOAL_MS, "ms",
                    note=f"a validated send, {FILES}-file memory; " + outside_model.describe(sends, RUNS))
