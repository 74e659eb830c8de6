"""Liveness and readiness: /healthz says the process answers; /readyz says it can serve (the database
answers with every migration applied, the cache and the broker answer), else 503 naming what fails.
The cache and broker outage is tests/integration/test_redis_down.py."""

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client

from lindy import readiness


@pytest.fixture(autouse=True)
def _fresh_readiness(monkeypatch):
    monkeypatch.setattr(readiness, "_migrated", False)


def test_healthz_answers_without_the_database():
    # No django_db mark: any database access here would raise.
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "alive"}


@pytest.mark.django_db
def test_readyz_is_200_when_the_database_cache_and_broker_answer():
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["database"], body["cache"], body["broker"], body["failing"]) == ("ok", "ok", "ok", [])


@pytest.mark.django_db(transaction=True)
def test_readyz_is_503_naming_the_database_when_a_migration_is_not_applied():
    """A deploy whose code is ahead of its database: a real row of django_migrations removed."""
    recorder = MigrationRecorder(connection)
    last = recorder.migration_qs.filter(app="lindy").order_by("-id").first()
    last.delete()
    try:
        response = Client().get("/readyz")
        assert response.status_code == 503
        body = response.json()
        assert body["failing"] == ["database"] and body["cache"] == "ok" and body["broker"] == "ok"
        assert body["database"] == f"error: NotMigrated: 1 migrations not applied, first lindy.{last.name}"
    finally:
        recorder.record_applied("lindy", last.name)
    assert Client().get("/readyz").status_code == 200


def test_healthz_and_readyz_refuse_a_post():
    assert Client().post("/healthz").status_code == 405
    assert Client().post("/readyz").status_code == 405
