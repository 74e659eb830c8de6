"""Celery's task_failure: a background task that ends in an exception no capture point closer to
the work recorded (lindy.failures records each exception once)."""

from __future__ import annotations

from celery.signals import task_failure

from lindy import failures


def _on_task_failure(sender=None, task_id=None, exception=None, **_) -> None:
    if exception is None:
        return
    name = getattr(sender, "name", "") or "a task"
    failures.capture(exception, kind="celery_task", route=name[:60], run=f"celery task {name} {task_id or ''}".strip())


def connect() -> None:
    task_failure.connect(_on_task_failure, weak=False, dispatch_uid="analyst.failures.task_failure")
