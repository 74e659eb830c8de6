"""Django's psycopg pool (DB_POOL_MAX_SIZE) under a threaded worker (issue 31): a thread must not
hold a pooled connection while it waits on its heartbeat thread, which needs one to beat. With 20
threads on a pool of 4, holding it made every block's end wait the full 10 s join while the pool's
connections sat idle on the server (about 50 s for the 20); given back first, it takes a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from tests.fixtures import celery_worker


@pytest.mark.django_db
def test_threads_sharing_a_small_pool_never_wait_on_their_heartbeats():
    if connection.vendor != "postgresql":
        pytest.skip("the psycopg pool is PostgreSQL's")
    env = {**os.environ, "DATABASE_URL": celery_worker.test_database_url(), "DB_CONN_MAX_AGE": "0"}
    out = subprocess.run([sys.executable, "-m", "tests.fixtures.pooled_heartbeats"], cwd=celery_worker.ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["done"] == 20
    assert result["longest_exit"] < 2, result  # was 10 s: the join's timeout
    assert result["wall"] < 8, result  # was about 50 s
    assert result["available"] == result["pool_size"], result  # every connection given back
