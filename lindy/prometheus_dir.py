"""prometheus_client's multiprocess mode for the web server's workers (gunicorn.conf.py).

Each gunicorn worker writes its request and database counters (django-prometheus) to files in one
directory; /metrics sums them, so a scrape answered by any worker reports the whole server.
"""

import os
import shutil
from pathlib import Path

VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def prepare(directory: Path) -> None:
    """Empty the directory and point prometheus_client at it: called in the master before any worker
    starts (and before prometheus_client is imported, which reads the variable once)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ[VARIABLE] = str(directory)


def worker_gone(pid: int) -> None:
    """A dead worker's gauges stop counting (its counters stay in the sums)."""
    if os.environ.get(VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def enabled() -> bool:
    return bool(os.environ.get(VARIABLE))
