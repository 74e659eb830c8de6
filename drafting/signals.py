"""New Gmail items from hydration: queue them for drafting (after the commit that stored them)."""

from __future__ import annotations

from django.dispatch import receiver

from hydration.events import items_stored
from lindy import queue


@receiver(items_stored, dispatch_uid="drafting.on_items_stored")
def _on_items_stored(sender, filesystem_id: int, source: str, run_id: int | None = None, **kwargs) -> None:
    if source == "gmail":
        queue.enqueue_or_log("drafting.tasks.items_process", filesystem_id, run_id)
