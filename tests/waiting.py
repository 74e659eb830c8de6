"""Waiting on state, never on time: a test that needs something to happen in another process polls
for it with a deadline generous enough for a loaded machine (LINDY_TEST_DEADLINE seconds, 240 by
default). A fast machine waits only as long as the work takes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE = float(os.environ.get("LINDY_TEST_DEADLINE", 240))


def wait_until(predicate: Callable[[], T], *, timeout: float = DEADLINE, interval: float = 0.2,
               what: str | Callable[[], str] = "") -> T:
    """The predicate's first truthy value; AssertionError naming `what` when the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"not reached within {timeout:.0f} s: {detail}")
        time.sleep(interval)
