"""A heartbeat for a long job: while the block runs, a daemon thread calls `beat()` every
`interval` seconds, so even a model call that blocks for minutes keeps the job's row fresh. A
heartbeat that stops means the worker died: the job's recovery sweep may take it over after a
stale window of a few beats, instead of waiting for a lease measured in model-call timeouts.

    with heartbeat.Beating(10, lambda: Job.objects.filter(pk=pk).update(heartbeat_at=timezone.now())):
        ...long work...
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connection

logger = logging.getLogger(__name__)


def release_pooled_connection() -> None:
    """Before a thread waits on another thread that may need a database connection: with a pool
    (DB_POOL_MAX_SIZE) the pooled connection this thread holds goes back first. Otherwise, when every
    pooled connection is held by a thread waiting so (its heartbeat thread, blocked on the pool), no
    one gets one until the wait times out: a threaded worker stalls with its connections idle on the
    server (issue 31). Inside a transaction the connection is the transaction: it stays. Without a
    pool nothing is done (the thread's own connection starves no one)."""
    if getattr(connection, "pool", None) and connection.connection is not None and not connection.in_atomic_block:
        connection.close()


class Beating:
    def __init__(self, interval: float, beat: Callable[[], object], name: str = "heartbeat"):
        self.interval, self.beat, self.name = interval, beat, name
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Beating:
        # 0 turns it off (the job's own writes are its only heartbeat). Inside the caller's
        # transaction the job's row may be uncommitted: a thread on its own connection would not
        # see it (PostgreSQL) or would wait on the caller's write lock (SQLite).
        if self.interval > 0 and not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._run, daemon=True, name=self.name)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        """Whether a thread beats (off at interval 0 or inside the caller's transaction)."""
        return self._thread is not None

    def wake(self) -> None:
        """Beat now rather than at the next interval (a job publishing progress); wakes that come
        while a beat is being written make one more beat, not one each."""
        self._wake.set()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            if self._thread.is_alive():
                release_pooled_connection()
            self._thread.join(10)

    def _run(self) -> None:
        try:
            while True:
                self._wake.wait(self.interval)
                if self._stop.is_set():
                    return
                self._wake.clear()
                try:
                    self.beat()
                except Exception:  # a missed beat is logged; the next one may get through
                    logger.exception("%s: a beat failed", self.name)
                finally:
                    # Not held between beats: under a threaded worker every run beats, and a pool
                    # (DB_POOL_MAX_SIZE) must not be drained by idle heartbeat threads.
                    connection.close()
        finally:
            connection.close()  # the thread's own database connection
