"""Celery: a real worker on Redis, the task defaults, and the beat entries created by code."""

import uuid

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from lindy import schedules
from lindy.celery import app
from lindy.tasks import heartbeat, ping
from tests.waiting import wait_until


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_task(celery_worker_process):

    celery_worker_process.start()
    token = uuid.uuid4().hex
    ping.delay(token)
    wait_until(lambda: cache.get(f"lindy:ping:{token}") is not None, what=celery_worker_process.log)


def test_task_defaults_are_safe():
    conf = app.conf
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_time_limit < settings.CELERY_VISIBILITY_TIMEOUT
    assert conf.beat_scheduler == "lindy.beat:SingleBeatScheduler"


@pytest.mark.django_db
def test_beat_entries_exist_after_migrate_and_sync_is_idempotent():
    names = {entry.name for entry in schedules.registered()}
    assert "lindy.heartbeat" in names
    assert names <= set(PeriodicTask.objects.values_list("name", flat=True))
    before = PeriodicTask.objects.count()
    call_command("sync_schedules", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert PeriodicTask.objects.count() == before


@pytest.mark.django_db
def test_sync_keeps_hand_edited_intervals():
    from django_celery_beat.models import IntervalSchedule

    task = PeriodicTask.objects.get(name="lindy.heartbeat")
    task.interval = IntervalSchedule.objects.create(every=300, period=IntervalSchedule.SECONDS)
    task.save()
    schedules.sync()
    assert PeriodicTask.objects.get(name="lindy.heartbeat").interval.every == 300


@pytest.mark.django_db
def test_heartbeat_shows_on_readyz(client):
    heartbeat()
    body = client.get("/readyz").json()
    assert body["database"] == "ok" and body["cache"] == "ok" and body["last_beat"]


@pytest.mark.django_db
@pytest.mark.parametrize("name, old", [("hydration.recover", 30), ("router.optimization_recover", 60)])
def test_sync_moves_an_entry_still_at_an_old_default_to_the_new_one(name, old):
    """A deployment migrated before the sweep got faster keeps its beat entry: sync moves it to the new
    default (recovery within a minute), while an interval someone chose by hand stays."""
    from django_celery_beat.models import IntervalSchedule

    new = next(e.every_seconds for e in schedules.registered() if e.name == name)
    task = PeriodicTask.objects.get(name=name)
    task.interval, _ = IntervalSchedule.objects.get_or_create(every=old, period=IntervalSchedule.SECONDS)
    task.save()
    schedules.sync()
    assert PeriodicTask.objects.get(name=name).interval.every == new < old
    task = PeriodicTask.objects.get(name=name)
    task.interval, _ = IntervalSchedule.objects.get_or_create(every=45, period=IntervalSchedule.SECONDS)
    task.save()
    schedules.sync()
    assert PeriodicTask.objects.get(name=name).interval.every == 45
