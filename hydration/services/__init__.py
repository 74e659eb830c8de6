"""Every write of hydration, one module per job:

- `runs` — a run's lifecycle: trigger, queue, claim under a lease with a heartbeat, recover.
- `pipeline` — what a claimed run does: fetch, summarize, the memory agent, one revision.
- `sources` — a file system's source rows and storing what they fetched.
- `schedule` — each file system's slot and the dispatch tick.

The Google connection (OAuth, tokens, disconnect) is google_workspace's.
"""

from .pipeline import describe_changes
from .runs import (
    ENQUEUE_FAILED_MESSAGE,
    HYDRATE_TASK,
    run_enqueue,
    run_execute,
    run_mark_enqueue_failed,
    run_now_sync,
    run_trigger,
    runs_enqueue_retry,
    runs_expire,
    runs_recover,
)
from .schedule import schedule_dispatch, schedule_ensure, schedules_backfill
from .sources import items_store, source_set_enabled, source_states_ensure

__all__ = [
    "ENQUEUE_FAILED_MESSAGE", "HYDRATE_TASK", "describe_changes", "items_store", "run_enqueue", "run_execute",
    "run_mark_enqueue_failed", "run_now_sync", "run_trigger", "runs_enqueue_retry", "runs_expire", "runs_recover",
    "schedule_dispatch", "schedule_ensure", "schedules_backfill", "source_set_enabled", "source_states_ensure",
]
