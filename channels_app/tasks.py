"""Celery tasks: thin wrappers over services, passing ids; every one is safe to run twice."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_process_init, worker_ready

from . import services, slack_app
from .services import outbound, queue
from .services.dispatch import DISPATCH_SOFT_TIME_LIMIT, DISPATCH_TIME_LIMIT

logger = logging.getLogger(__name__)


@shared_task(name=queue.DEBOUNCE_FIRE, bind=True, acks_late=True, max_retries=5,
             default_retry_delay=2, time_limit=60,
             soft_time_limit=50)
def debounce_fire(self, conversation_id: int, version: int | None = None):
    # The service queues what follows (a re-check at the deadline, or the dispatch).
    return services.debounce_check(conversation_id=conversation_id, version=version).status.value


@shared_task(name=queue.BUNDLE_DISPATCH, bind=True, acks_late=True, max_retries=5,
             time_limit=DISPATCH_TIME_LIMIT, soft_time_limit=DISPATCH_SOFT_TIME_LIMIT)
def bundle_dispatch(self, bundle_id: int):
    # The service raises only when the agent had not started: retrying then cannot answer twice.
    try:
        return services.bundle_dispatch(bundle_id=bundle_id, task_id=self.request.id or "")
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            services.bundle_give_up(bundle_id=bundle_id, error=str(exc))
            raise
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 5, 300)) from exc


@shared_task(name=queue.DEBOUNCE_RECOVER, acks_late=True, time_limit=120, soft_time_limit=100)
def debounce_recover(include_waiting: bool = False):
    return services.debounce_recover(include_waiting=include_waiting)


@shared_task(name=queue.ATTACHMENT_STORE, bind=True, acks_late=True, max_retries=3, time_limit=120,
             soft_time_limit=100)
def attachment_store(self, attachment_id: int):
    try:
        return services.attachment_store(attachment_id=attachment_id)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=10 * (self.request.retries + 1)) from exc


@shared_task(name=queue.CONSENT_CONFIRM, bind=True, acks_late=True, max_retries=5, time_limit=60,
             soft_time_limit=50)
def consent_confirm(self, opt_out_id: int, direction: str):
    # The service claims the confirmation first and gives the claim back when the send failed.
    try:
        return services.consent_confirm(opt_out_id=opt_out_id, direction=direction)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 10, 600)) from exc


@shared_task(name=queue.RATIO_ALERTS_CHECK, acks_late=True, time_limit=120, soft_time_limit=100)
def ratio_alerts_check():
    return [alert.pk for alert in services.ratio_alerts_check()]


@shared_task(name=queue.RATIO_ALERT_NOTIFY, bind=True, acks_late=True, max_retries=5, time_limit=60,
             soft_time_limit=50)
def ratio_alert_notify(self, alert_id: int):
    # Each way of telling (email, Slack) is claimed per level: a retry sends only what failed.
    try:
        return services.ratio_alert_notify(alert_id=alert_id)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 30, 900)) from exc


@shared_task(name=queue.SLACK_EVENT_PROCESS, bind=True, acks_late=True, max_retries=5, time_limit=60,
             soft_time_limit=50)
def slack_event_process(self, event_pk: int):
    # The service claims the stored event (once), the slack-bolt listeners act on it.
    try:
        return services.slack_event_process(event_pk=event_pk, handle=slack_app.dispatch_stored)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 5, 300)) from exc


@shared_task(name=queue.SLACK_EVENTS_RECOVER, acks_late=True, time_limit=60, soft_time_limit=50)
def slack_events_recover():
    return services.slack_events_recover()


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs):
    """A worker that died held its countdown tasks unacknowledged until the broker's visibility
    timeout; the deadlines are in the database, so queue what is pending again right away."""
    try:
        debounce_recover.delay(include_waiting=True)
    except Exception:  # the broker may be down; the beat sweep will catch up
        logger.exception("could not queue debounce recovery on worker start")


@worker_process_init.connect
def _warm_clients(sender=None, **kwargs):
    """Each worker process (a prefork child, or a solo worker) builds its provider clients now."""
    try:
        outbound.provider_clients_warm()
    except Exception:  # a provider misconfigured at start is reported by the first real call
        logger.exception("could not build the provider clients on worker start")
