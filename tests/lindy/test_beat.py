"""Beat runs once: two beat schedulers on one schedule fire each periodic task once per period. Only
the one holding the leader lock fires; when it dies, the other takes over after the lock's time to
live, reading from the database what was last fired, so nothing fires twice at the takeover."""

import time

import pytest
from django.test import override_settings
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from lindy.beat import SingleBeatScheduler
from lindy.celery import app

# transaction=True: the scheduler closes and reopens its connection as beat does (close_old_connections).
pytestmark = pytest.mark.django_db(transaction=True)

TASK = "tests.beat.not_a_registered_task"  # sent by name: the scheduler's own send path records it


class Recording(SingleBeatScheduler):
    fired: list[tuple[str, str, float]] = []

    def send_task(self, name, *args, **kwargs):  # the seam where beat hands a due task to the broker
        Recording.fired.append((self.label, name, time.monotonic()))


def _scheduler(label: str) -> Recording:
    scheduler = Recording(app=app, lazy=False)
    scheduler.label = label
    return scheduler


def _tick_until(schedulers, done, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        wait = min([scheduler.tick() for scheduler in schedulers])
        time.sleep(max(0.0, min(wait, 0.1)))  # tick() says how long until the next is due: 0 or less is now
    assert done(), Recording.fired


@pytest.fixture
def every_second():
    PeriodicTask.objects.update(enabled=False)  # only ours fires in this test
    interval, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(name="beat-once", task=TASK, interval=interval)
    Recording.fired = []


def _fired_by(label: str) -> list[float]:
    return [at for who, name, at in Recording.fired if who == label and name == TASK]


def _assert_once_per_period() -> None:
    # From the first beat's second firing on: on a loaded machine django-celery-beat may fire a brand-new
    # entry a second time in its first period (one beat alone does it too), which is not what this tests.
    times = sorted(at for _, name, at in Recording.fired if name == TASK)[1:]
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert gaps and min(gaps) > 0.8, gaps  # two beats firing, or a double firing at the takeover: a gap near 0
    handover = min(_fired_by("second")) - max(_fired_by("first"))
    assert handover > 0.8, handover


@pytest.mark.parametrize("redis", [True, False], ids=["redis-lock", "file-lock"])
def test_two_beats_fire_each_task_once_per_period_and_the_second_takes_over(every_second, settings, redis):
    if not redis:
        settings.REDIS_URL = ""
    elif not settings.REDIS_URL:
        pytest.skip("needs Redis")
    with override_settings(BEAT_LOCK_TTL_SECONDS=5):
        first, second = _scheduler("first"), _scheduler("second")
        try:
            _tick_until([first, second], lambda: len(_fired_by("first")) >= 4)
            assert _fired_by("second") == [] and first.leading and not second.leading

            if redis:  # the first beat dies without a word: its lock expires by itself
                pass
            else:  # a dead process's file lock is released by the kernel
                first.lock.release()
            _tick_until([second], lambda: len(_fired_by("second")) >= 3)
            assert second.leading
            _assert_once_per_period()
        finally:
            second.close()
            first.lock.release()
