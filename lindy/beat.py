"""Beat runs once: the Celery beat scheduler fires periodic tasks only while it holds the leader lock.

Two beat processes started by mistake (or one per machine, for failover) each run this scheduler; the
one holding the lock fires, the others wait. The lock is a Redis key with a time to live that its
holder renews on every tick (every few seconds); a holder that dies stops renewing and another beat
takes over within BEAT_LOCK_TTL_SECONDS, after reading the schedule afresh from the database, so it
does not fire again what the first one already fired (each firing is saved at once). Without Redis
(the embedded default, one machine) the lock is an exclusive lock on a file under var/.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import uuid
from pathlib import Path

from django.conf import settings
from django_celery_beat.schedulers import DatabaseScheduler

logger = logging.getLogger(__name__)

# Set the key if free, renew it if ours: one round trip, no race between the two.
_HOLD = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
end
if not holder then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisLock:
    def __init__(self, url: str, key: str, ttl: float) -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.key, self.ttl_ms = key, int(ttl * 1000)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._hold, self._release = self.client.register_script(_HOLD), self.client.register_script(_RELEASE)

    def hold(self) -> bool:
        return bool(self._hold(keys=[self.key], args=[self.holder, self.ttl_ms]))

    def release(self) -> None:
        self._release(keys=[self.key], args=[self.holder])


class FileLock:
    """One machine, no Redis: an exclusive lock on a file, held until the process ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def hold(self) -> bool:
        if self.fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock
            self.fd = None


def leader_lock() -> RedisLock | FileLock:
    if settings.REDIS_URL:
        return RedisLock(settings.REDIS_URL, f"{settings.CACHE_KEY_PREFIX}:beat:leader", settings.BEAT_LOCK_TTL_SECONDS)
    return FileLock(Path(settings.VAR_DIR) / "beat.lock")


class SingleBeatScheduler(DatabaseScheduler):
    """django-celery-beat's scheduler (schedules editable in the admin), firing only while it leads."""

    def __init__(self, *args, **kwargs) -> None:
        self.lock = leader_lock()
        self.leading = False
        # Renew well within the lock's life, and save each firing at once, so a beat taking over
        # reads from the database what was last fired.
        kwargs.setdefault("max_interval", min(5.0, settings.BEAT_LOCK_TTL_SECONDS / 3))
        super().__init__(*args, **kwargs)
        self.sync_every_tasks = 1

    def _still_leading(self) -> bool:
        try:
            holds = self.lock.hold()
        except Exception:  # Redis unreachable: firing now could double another beat's work
            logger.warning("beat: the leader lock is unreachable; not firing", exc_info=True)
            holds = False
        if holds and not self.leading:
            logger.info("beat: leading; reading the schedule afresh")
            self._initial_read = True  # the schedule another beat advanced while this one waited
            self._heap = None
        elif self.leading and not holds:
            logger.warning("beat: another beat holds the lock; standing by")
        self.leading = holds
        return holds

    def tick(self, *args, **kwargs) -> float:
        if not self._still_leading():
            return self.max_interval
        return super().tick(*args, **kwargs)

    def close(self) -> None:
        super().close()
        if self.leading:
            try:
                self.lock.release()
            except Exception:
                logger.warning("beat: could not release the leader lock; it expires by itself", exc_info=True)
            self.leading = False
