"""Loaded with `-p tests.pytest_env`, before Django's settings are read.

Gives each pytest-xdist worker its own var/ folder (SQLite test database, file cache,
broker folders), its own Redis database and Celery queue, so parallel workers and a
running `make run` never see each other's state. Redis is used when REDIS_URL is set,
or when a server answers on 127.0.0.1:6379; tests that need it skip otherwise.
"""

import hashlib
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
WORKER_INDEX = int(WORKER[2:]) if WORKER[2:].isdigit() else 0


def _redis_reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _worker_redis_url(url: str) -> str:
    parts = urlsplit(url)
    # Databases 1..15 by worker (and by checkout, with LINDY_TEST_REDIS_DB_BASE): a test
    # that flushes its cache flushes only its own.
    base_db = int(os.environ.get("LINDY_TEST_REDIS_DB_BASE", 0))
    db = 1 + (base_db + WORKER_INDEX) % 15
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lindy.settings")
os.environ["LINDY_VAR_DIR"] = str(ROOT / "var" / "test" / WORKER)
CHECKOUT = hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]
os.environ["CELERY_QUEUE"] = f"lindy-test-{CHECKOUT}-{WORKER}"
os.environ["LINDY_CACHE_PREFIX"] = f"test-{CHECKOUT}-{WORKER}"
os.environ.setdefault("LINDY_MODEL_OFFLINE", "1")
os.environ["LINDY_FAST_PASSWORD_HASHER"] = "1"
# No provider budgets unless a test sets one (tests/router/test_budgets.py): the fake providers'
# calls of a whole run must not drain a bucket other tests then wait on.
os.environ["ROUTER_DEFAULT_RPM"] = "0"
# Persistent connections outlive a test and block dropping the test database.
os.environ["DB_CONN_MAX_AGE"] = "0"
os.environ.pop("ANTHROPIC_API_KEY", None)
if not os.environ.get("REDIS_URL") and _redis_reachable("127.0.0.1", 6379):
    os.environ["REDIS_URL"] = "redis://127.0.0.1:6379/0"
if os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"])
