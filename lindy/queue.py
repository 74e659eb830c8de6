"""Enqueue a Celery task by its registered name.

Services send tasks by name so that no service imports a tasks module (tasks import services,
never the other way round; import-linter holds it). Looking the task up in the app's registry,
rather than `send_task`, keeps the task's own options and honours CELERY_TASK_ALWAYS_EAGER.
Each app registers its tasks when it loads (celery autodiscovery, or its AppConfig.ready).
Which queue a task goes to is settings.CELERY_TASK_ROUTES (one queue per class of work).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.utils import timezone

from . import outages

logger = logging.getLogger(__name__)


def all_queues() -> list[str]:
    """Every queue a task may be routed to (settings.CELERY_TASK_ROUTES): the default queue,
    then one per class of work. A worker that must run everything consumes all of them."""
    base = settings.CELERY_TASK_DEFAULT_QUEUE
    return [base, *(f"{base}.{kind}" for kind in settings.LINDY_QUEUE_CLASSES)]


@dataclass
class Held:
    """A task queued while held (see `held`): run by the simulation once `due`."""

    task_name: str
    args: tuple
    due: datetime


_holding = threading.local()


@contextmanager
def held(into: list[Held]) -> Iterator[list[Held]]:
    """Every task this thread queues inside the block is appended to `into` instead of going to
    the broker: a simulation of the product (the demo, on its simulated clock) runs them itself,
    in this process, when they fall due on its clock (lindy.simulation)."""
    previous = getattr(_holding, "into", None)
    _holding.into = into
    try:
        yield into
    finally:
        _holding.into = previous


def enqueue(task_name: str, *args, countdown: float | None = None) -> None:
    """Queue the task registered under `task_name`; a broker error propagates."""
    task = current_app.tasks[task_name]
    into = getattr(_holding, "into", None)
    if into is not None:
        into.append(Held(task_name, args, timezone.now() + timedelta(seconds=countdown or 0)))
        return
    if countdown is None:
        task.apply_async(args)
    else:
        task.apply_async(args, countdown=countdown)


def enqueue_or_log(task_name: str, *args, countdown: float | None = None,
                   then: str = "its recovery sweep will") -> bool:
    """For work whose input is already stored: a broker hiccup must not fail the caller (a webhook
    would make the provider retry a message we have). A recovery sweep queues whatever is due;
    `then` says what happens instead, for the log. Returns whether the task was queued."""
    try:
        enqueue(task_name, *args, countdown=countdown)
    except outages.BROKER_ERRORS as exc:
        outages.report_down("broker", f"could not queue {task_name}; {then}", exc)
        return False
    except Exception:
        logger.exception("could not queue %s%s; %s", task_name, args, then)
        return False
    outages.report_up("broker")
    return True


def broker_check() -> None:
    """Connect to the broker once, without retrying; raises one of lindy.outages.BROKER_ERRORS."""
    with current_app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=0)
