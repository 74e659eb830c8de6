"""Redis down, product up: the errors that mean "the cache or the broker is unreachable", and a
log line once per outage rather than once per request.

Catch these, not Exception: a bug must still fail loudly. The cache (django's RedisCache) raises
redis-py's connection and timeout errors; Celery re-raises a broker it cannot reach as kombu's
OperationalError (with the filesystem broker, an OSError).
"""

from __future__ import annotations

import logging
import threading

from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

CACHE_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError)
BROKER_ERRORS: tuple[type[BaseException], ...] = (BrokerOperationalError, RedisConnectionError, RedisTimeoutError,
                                                  OSError)

_lock = threading.Lock()
_down: set[str] = set()


def report_down(part: str, message: str, exc: BaseException) -> None:
    """Log `message` the first time `part` is found down in this process (until it is back)."""
    with _lock:
        first = part not in _down
        _down.add(part)
    if first:
        logger.warning("%s: %s (%s: %s); logged once until it is back", part, message, type(exc).__name__, exc)


def report_up(part: str) -> None:
    if part in _down:
        with _lock:
            if part in _down:
                _down.discard(part)
                logger.warning("%s is reachable again", part)
