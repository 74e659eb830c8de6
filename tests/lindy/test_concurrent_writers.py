"""Several processes writing one database at once, as `make run` does (web, five workers and beat on
one SQLite file by default): every write lands, none fails with "database is locked", and a
read-then-write (the next event number of a task) never hands two writers the same number.

Runs on whichever database the suite runs on; on SQLite it is the proof that WAL, the busy timeout
and IMMEDIATE transactions (lindy/settings/core.py) make concurrent writers wait instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from django.db import connection

from lindy import services
from lindy.models import AgentTask, TaskEvent
from tests.factories import TeamFactory, UserFactory
from tests.fixtures import celery_worker

pytestmark = pytest.mark.django_db(transaction=True)

WRITES_PER_PROCESS = 60

WRITER = textwrap.dedent("""
    import sys
    import django
    django.setup()
    from lindy import services
    from lindy.models import AgentTask
    task = AgentTask.objects.get(pk=int(sys.argv[1]))
    for i in range(int(sys.argv[2])):
        services.task_event_add(task=task, actor="assistant", content=f"{sys.argv[3]} {i}")
""")


def _writer(task_id: int, name: str) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": celery_worker.test_database_url(), "DB_CONN_MAX_AGE": "0"}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(task_id), str(WRITES_PER_PROCESS), name],
                            cwd=celery_worker.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_burst_of_writes_from_two_processes_all_land_with_no_lock_error():
    team = TeamFactory(name="Acme")
    task = services.task_create(team=team, owner=UserFactory(), title="busy")
    writers = [_writer(task.pk, "first"), _writer(task.pk, "second")]
    # This process writes too, meanwhile, like the web process beside two workers.
    for i in range(WRITES_PER_PROCESS):
        services.task_event_add(task=task, actor="user", content=f"here {i}")
    results = [w.communicate(timeout=600) for w in writers]

    for writer, (_, stderr) in zip(writers, results, strict=True):
        assert writer.returncode == 0, stderr[-3000:]
        assert "database is locked" not in stderr
    seqs = list(TaskEvent.objects.filter(task=task).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 3 * WRITES_PER_PROCESS + 1))  # every write, no number twice or skipped
    assert AgentTask.objects.filter(pk=task.pk).exists()


def test_sqlite_is_configured_for_concurrent_processes():
    if connection.vendor != "sqlite":
        pytest.skip("the settings of the embedded default")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 10_000
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
