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


def replies_then_fails(*, user, channel, conversation_ref, messages):
    """An agent run that answered the user, then crashed."""
    from channels_app.services import user_message_send

    CALLS.append({"user": user, "channel": channel, "conversation_ref": conversation_ref, "messages": messages})
    user_message_send(user=user, body="On it: your 3pm is free.")
    raise RuntimeError("agent crashed after replying")


def acts_then_runs_out_of_time(*, user, channel, conversation_ref, messages):
    """A slow agent run: it recorded the user's messages and began to act, then hit the task's soft
    time limit."""
    from celery.exceptions import SoftTimeLimitExceeded

    from lindy import services as lindy_services
    from lindy.models import Membership

    CALLS.append({"user": user, "channel": channel, "conversation_ref": conversation_ref, "messages": messages})
    team = Membership.objects.filter(user=user).first().team
    task = lindy_services.task_create(team=team, owner=user, title="slow")
    lindy_services.task_event_add(task=task, actor="user", content=messages[0]["text"])
    lindy_services.task_event_add(task=task, actor="assistant", content="Looking into it.")
    raise SoftTimeLimitExceeded()


def record_act_then_hang(*, user, channel, conversation_ref, messages):
    """A slow agent run that has already acted (an event on the user's task), in another process."""
    from lindy import services as lindy_services
    from lindy.models import Membership

    record(user=user, channel=channel, conversation_ref=conversation_ref, messages=messages)
    task = lindy_services.task_create(team=Membership.objects.filter(user=user).first().team, owner=user, title="slow")
    lindy_services.task_event_add(task=task, actor="assistant", content="Checking your calendar.")
    time.sleep(120)


def record_statements_so_far(*, user, channel, conversation_ref, messages):
    """In-process: how many statements this connection ran before the agent got the bundle."""
    from django.db import connection

    CALLS.append({"user": user, "messages": messages, "statements": len(connection.queries_log)})


PROPOSED_KEY = "test:channels:agent-proposed"


def agent_pausing_after_proposal(*, user, channel, conversation_ref, messages):
    """The real agent, in a worker the test kills: once its reply to the user is proposed (the
    event committed), it says so in Redis and blocks, so the kill lands exactly there."""
    from agent import loop
    from agent import services as agent_services

    proposed = loop._call_event

    def call_event_then_block(task, tool, arguments, justification, call_id):
        proposed(task, tool, arguments, justification, call_id)
        if tool in loop.USER_MESSAGE_TOOLS:
            _redis().set(PROPOSED_KEY, task.pk)
            while True:  # until the test kills the worker
                time.sleep(0.2)

    loop._call_event = call_event_then_block
    try:
        return agent_services.handle_inbound(user=user, channel=channel, conversation_ref=conversation_ref,
                                             messages=messages)
    finally:
        loop._call_event = proposed
