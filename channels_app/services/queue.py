"""Queue the channels app's Celery tasks by name, so services never import the tasks module
(tasks.py imports services; the names are the contract between them).

`current_app.tasks[name].apply_async` goes through the registered task object, so it honours
CELERY_TASK_ALWAYS_EAGER and the task's own options, which `send_task` would not. The tasks
are registered when the app loads (ChannelsAppConfig.ready imports channels_app.tasks).
"""

from __future__ import annotations

import logging

from celery import current_app

logger = logging.getLogger(__name__)

DEBOUNCE_FIRE = "channels_app.tasks.debounce_fire"
BUNDLE_DISPATCH = "channels_app.tasks.bundle_dispatch"
ATTACHMENT_STORE = "channels_app.tasks.attachment_store"
DEBOUNCE_RECOVER = "channels_app.tasks.debounce_recover"
RATIO_ALERTS_CHECK = "channels_app.tasks.ratio_alerts_check"


def task_send(name: str, *args, countdown: float | None = None) -> None:
    """Queue the task registered under `name`; a broker error propagates."""
    current_app.tasks[name].apply_async(args, countdown=countdown)


def task_send_or_log(name: str, *args, countdown: float | None = None) -> None:
    """For work whose input is already stored: a broker hiccup must not fail the caller (a webhook
    would make the provider retry a message we have). The recovery sweep queues whatever is due."""
    try:
        task_send(name, *args, countdown=countdown)
    except Exception:
        logger.exception("could not queue %s%s; the recovery sweep will", name, args)
