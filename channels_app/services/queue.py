"""The channels app's Celery task names, the contract between its services and tasks.py:
services queue them with the core's lindy.queue (tasks are registered when the app loads,
ChannelsAppConfig.ready imports channels_app.tasks)."""

from __future__ import annotations

from lindy.queue import enqueue as task_send  # noqa: F401  (re-exported for the channels services)
from lindy.queue import enqueue_or_log as task_send_or_log  # noqa: F401

DEBOUNCE_FIRE = "channels_app.tasks.debounce_fire"
BUNDLE_DISPATCH = "channels_app.tasks.bundle_dispatch"
ATTACHMENT_STORE = "channels_app.tasks.attachment_store"
DEBOUNCE_RECOVER = "channels_app.tasks.debounce_recover"
RATIO_ALERTS_CHECK = "channels_app.tasks.ratio_alerts_check"
CONSENT_CONFIRM = "channels_app.tasks.consent_confirm"
RATIO_ALERT_NOTIFY = "channels_app.tasks.ratio_alert_notify"
SLACK_EVENT_PROCESS = "channels_app.tasks.slack_event_process"
SLACK_EVENTS_RECOVER = "channels_app.tasks.slack_events_recover"
