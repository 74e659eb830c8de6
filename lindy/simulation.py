"""The product run on a simulated clock, in this process: what the demo uses to make its data by
doing what people and jobs would have done, rather than writing rows.

A Simulation holds the Celery work the product queues (lindy.queue.held) and the work it leaves
for after the transaction commits, and runs both when they fall due on the clock (time-machine),
each task through Celery's own `apply` (its retries and wrappers included). The whole demo is one
transaction, so the commit hooks the code registers are run here, as a commit would run them, and
taken off the connection's list so the real commit does not run them a second time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import time_machine
from celery import current_app
from django.db import connection
from django.utils import timezone

from . import queue


class TaskFailed(Exception):
    def __init__(self, task_name: str, error: BaseException | None):
        super().__init__(f"{task_name} failed: {type(error).__name__}: {error}")
        self.task_name, self.error = task_name, error


class Simulation:
    def __init__(self, clock: time_machine.Traveller) -> None:
        self.clock = clock
        self.queued: list[queue.Held] = []
        self.ran: dict[str, int] = {}
        self._hooks_from = len(connection.run_on_commit)

    def move_to(self, when: datetime) -> None:
        """Move the clock forward (never back: what ran, ran)."""
        if when > timezone.now():
            self.clock.move_to(when)

    def _commit_hooks(self) -> bool:
        hooks = connection.run_on_commit[self._hooks_from:]
        del connection.run_on_commit[self._hooks_from:]
        for entry in hooks:  # (savepoint ids, the hook, robust)
            entry[1]()
        return bool(hooks)

    def settle(self, until: datetime | None = None) -> None:
        """Run the commit hooks and every queued task due by `until` (all of them when None), in
        the order they fall due, moving the clock to each one's time. A failed task raises."""
        while True:
            with queue.held(self.queued):
                if self._commit_hooks():
                    continue
                due = [h for h in self.queued if until is None or h.due <= until]
                if not due:
                    break
                task = min(due, key=lambda h: h.due)
                self.queued.remove(task)
                self.move_to(task.due)
                result = current_app.tasks[task.task_name].apply(args=task.args)
                self.ran[task.task_name] = self.ran.get(task.task_name, 0) + 1
            if result.failed():
                raise TaskFailed(task.task_name, result.result)
        if until is not None:
            self.move_to(until)


@contextmanager
def simulated(start: datetime) -> Iterator[Simulation]:
    """A simulation whose clock starts at `start` and stands still between its moves."""
    with time_machine.travel(start, tick=False) as clock:
        simulation = Simulation(clock)
        with queue.held(simulation.queued):
            yield simulation
        simulation.settle()
