"""A stand-in for LINDY_INBOUND_HANDLER in tests: records each call in Redis, so a call made by
a separate Celery worker process is observable from the test."""

from __future__ import annotations

import json
import os
import time

import redis
from django.conf import settings

KEY = "test:channels:inbound-calls"


def _redis():
    return redis.Redis.from_url(settings.REDIS_URL)


def record(*, user, channel, conversation_ref, messages):
    _redis().rpush(KEY, json.dumps({
        "user": user.email, "channel": channel, "conversation_ref": conversation_ref, "messages": messages,
        "at": time.time(), "pid": os.getpid(),
    }))


def calls() -> list[dict]:
    return [json.loads(item) for item in _redis().lrange(KEY, 0, -1)]


def reset() -> None:
    _redis().delete(KEY)


CALLS: list[dict] = []


def record_in_process(*, user, channel, conversation_ref, messages):
    """Same contract, in-process: for tests that call the services directly."""
    CALLS.append({"user": user, "channel": channel, "conversation_ref": conversation_ref, "messages": messages})


def failing(*, user, channel, conversation_ref, messages):
    raise RuntimeError("agent unavailable")
