"""search_tasks: a read over the user's own task history."""

from __future__ import annotations

from lindy import permissions
from lindy.models import TaskEvent

MAX_HITS = 10


def run(ctx, arguments: dict, result_cls):
    query = (arguments.get("query") or "").strip()
    if not query:
        return result_cls(ok=False, adapter="search", content="The query is empty.")
    events = (
        TaskEvent.objects.filter(task__in=permissions.visible_tasks(ctx.user), content__icontains=query)
        .select_related("task").order_by("-created_at")[:MAX_HITS]
    )
    lines = [f"[{e.task.title} #{e.seq} {e.actor}] {e.content[:300]}" for e in events]
    return result_cls(ok=True, adapter="search", data={"hits": len(lines)},
                      content="\n".join(lines) if lines else f"No earlier task mentions “{query}”.")
