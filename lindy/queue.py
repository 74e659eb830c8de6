"""Enqueue a Celery task by its registered name.

Services send tasks by name so that no service imports a tasks module (tasks import services,
never the other way round). Looking the task up in the app's registry, rather than
`send_task`, keeps the task's own options and honours CELERY_TASK_ALWAYS_EAGER."""

from __future__ import annotations

from celery import current_app


def enqueue(task_name: str, *args, **kwargs):
    return current_app.tasks[task_name].apply_async(args=args, kwargs=kwargs)
