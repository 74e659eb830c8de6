"""Failures for the tests, raised by the product's own code on inputs that break it (never rows
written by hand): the Gmail parser fed a message whose headers are strings."""

from __future__ import annotations

from analyst.models import FailureGroup
from google_workspace import messages as gmail
from lindy import failures

BAD_PAYLOAD = {"headers": ["From: jane@initech.test", "Subject: renewal"]}


def raise_in_gmail_parser(*, user=None, team=None, task=None, log=None, message_extra: str = "") -> FailureGroup:
    """One failure of google_workspace.messages.headers_of, captured like a source's; its group."""
    try:
        with failures.capturing("hydration_source", route="hydration.gmail", run="test run",
                                task_id=getattr(task, "pk", None), log=log or [{"actor": "run", "text": "fetch"}],
                                **failures.ids_of(user=user, team=team)):
            if message_extra:
                raise ValueError(message_extra)
            gmail.headers_of(BAD_PAYLOAD)
    except (AttributeError, ValueError):
        pass
    return FailureGroup.objects.order_by("-last_seen", "-pk").first()
