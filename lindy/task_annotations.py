"""What other apps say about a task, shown on its page and in the task API (/api/tasks/{id}).

The core names no app (DESIGN.md): an app registers an `Annotation` from its AppConfig.ready,
with a `data(user, task)` reader that applies the app's own permission rule and returns a small
JSON-able dict, or None to say nothing to this user (not allowed, or nothing recorded). The
task is one the user may already see (lindy.permissions.visible_tasks). Each reader runs on
every view of a task, so it must read a bounded number of rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Annotation:
    key: str
    template: str  # included on the task page with `data` in its context
    data: Callable[[object, object], dict | None]
    order: int = 50


_ANNOTATIONS: dict[str, Annotation] = {}


def register(annotation: Annotation) -> None:
    _ANNOTATIONS[annotation.key] = annotation


def registered() -> list[Annotation]:
    return sorted(_ANNOTATIONS.values(), key=lambda a: (a.order, a.key))


def for_task(user, task) -> list[dict]:
    """The annotations this user sees on this task, in order: {"key", "template", "data"}."""
    shown = []
    for annotation in registered():
        data = annotation.data(user, task)
        if data is not None:
            shown.append({"key": annotation.key, "template": annotation.template, "data": data})
    return shown
