"""Assistant tasks: for a user, every task they performed; for the team, all public tasks.

A task grows as events are added to it, so an item is one task at one length: a task that
gained events since the last run comes back as a new item holding only the new events."""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse

from lindy.models import AgentTask, TaskEvent

from ..models import Item
from .base import Fetched, Source, SourceItem

BATCH = 300


def _line(event: TaskEvent) -> str:
    who = {"user": "User", "assistant": "Assistant", "tool": f"Tool {event.tool_name}".strip(),
           "external": f"External ({event.name})" if event.name else "External",
           "system": "Lindy (system note, not the user)"}.get(event.actor, event.actor)
    return f"{who}: {event.content}"


class TasksSource(Source):
    kind = "tasks"

    def _queryset(self, filesystem):
        if filesystem.kind == "team":
            return AgentTask.objects.filter(team_id=filesystem.team_id, visibility=AgentTask.Visibility.PUBLIC)
        return AgentTask.objects.filter(owner=filesystem.owner)

    def fetch(self, filesystem, cursor: dict) -> Fetched:
        seen: dict[str, int] = {str(k): int(v) for k, v in (cursor.get("seen") or {}).items()}
        since = cursor.get("since")
        queryset = self._queryset(filesystem).select_related("owner").order_by("updated_at", "pk")
        if since:
            queryset = queryset.filter(updated_at__gte=datetime.fromisoformat(since))
        tasks = list(queryset[:BATCH])
        events: dict[int, list[TaskEvent]] = {}
        if tasks:
            for event in TaskEvent.objects.filter(task__in=tasks).order_by("task_id", "seq"):
                events.setdefault(event.task_id, []).append(event)
        items = []
        for task in tasks:
            done = seen.get(str(task.pk), 0)
            new = [e for e in events.get(task.pk, []) if e.seq > done]
            if not new:
                continue
            last = new[-1].seq
            # A transcript is the user's own words only if every new event is the user's: the
            # assistant's text, tool results and outside parties are not.
            own = all(e.actor == TaskEvent.Actor.USER for e in new)
            items.append(SourceItem(
                external_id=f"task-{task.pk}@{last}", title=task.title, author=task.owner.email,
                author_kind=Item.AuthorKind.OWNER if own else Item.AuthorKind.MIXED,
                author_name=task.owner.display_name if own else f"the transcript of task “{task.title}”"[:255],
                occurred_at=new[-1].created_at, reference=reverse("task-detail", args=[task.pk]),
                text=f"Task: {task.title}\n" + "\n".join(_line(e) for e in new),
            ))
            seen[str(task.pk)] = last
        new_since = tasks[-1].updated_at.isoformat() if tasks else since
        # Keep the per-task high-water marks small: only tasks touched at or after the new cursor matter.
        if tasks and len(seen) > 2000:
            recent = {str(pk) for pk in self._queryset(filesystem).filter(
                updated_at__gte=tasks[-1].updated_at).values_list("pk", flat=True)}
            seen = {k: v for k, v in seen.items() if k in recent}
        return Fetched(items=items, cursor={"since": new_since, "seen": seen})

    def describe(self, filesystem) -> list[str]:
        if filesystem.kind == "team":
            return ["Public assistant tasks of the team"]
        return ["Every assistant task you performed"]
