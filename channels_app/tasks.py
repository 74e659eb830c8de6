"""Celery tasks: thin wrappers over services, passing ids; every one is safe to run twice."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

from . import services
from .services.inbound import DISPATCH_SOFT_TIME_LIMIT, DISPATCH_TIME_LIMIT

logger = logging.getLogger(__name__)


@shared_task(name="channels_app.tasks.debounce_fire", bind=True, acks_late=True, max_retries=5,
             default_retry_delay=2, time_limit=60,
             soft_time_limit=50)
def debounce_fire(self, conversation_id: int, version: int | None = None):
    outcome, value = services.debounce_fire(conversation_id=conversation_id, version=version)
    if outcome == "wait":
        # Clock skew or a recovery run: check again at the deadline.
        debounce_fire.apply_async((conversation_id, version), countdown=value)
        return "wait"
    if outcome == "dispatch":
        bundle_dispatch.delay(int(value))
    return outcome


@shared_task(name="channels_app.tasks.bundle_dispatch", bind=True, acks_late=True, max_retries=5,
             time_limit=DISPATCH_TIME_LIMIT, soft_time_limit=DISPATCH_SOFT_TIME_LIMIT)
def bundle_dispatch(self, bundle_id: int):
    # The service raises only when the agent had not started: retrying then cannot answer twice.
    try:
        return services.bundle_dispatch(bundle_id=bundle_id)
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            services.inbound.bundle_give_up(bundle_id=bundle_id, error=str(exc))
            raise
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 5, 300)) from exc


@shared_task(name="channels_app.tasks.debounce_recover", acks_late=True, time_limit=120, soft_time_limit=100)
def debounce_recover(include_waiting: bool = False):
    return services.debounce_recover(include_waiting=include_waiting)


@shared_task(name="channels_app.tasks.attachment_store", bind=True, acks_late=True, max_retries=3, time_limit=120,
             soft_time_limit=100)
def attachment_store(self, attachment_id: int):
    try:
        return services.attachment_store(attachment_id=attachment_id)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=10 * (self.request.retries + 1)) from exc


@shared_task(name="channels_app.tasks.ratio_alerts_check", acks_late=True, time_limit=120, soft_time_limit=100)
def ratio_alerts_check():
    return [alert.pk for alert in services.ratio_alerts_check()]


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs):
    """A worker that died held its countdown tasks unacknowledged until the broker's visibility
    timeout; the deadlines are in the database, so queue what is pending again right away."""
    try:
        debounce_recover.delay(include_waiting=True)
    except Exception:  # the broker may be down; the beat sweep will catch up
        logger.exception("could not queue debounce recovery on worker start")
