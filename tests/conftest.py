"""Shared fixtures: the role cast, API clients, a real Celery worker, local fake servers."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from lindy import outages, services
from lindy.models import Membership
from router import routing
from tests import demo_snapshot, seams
from tests.factories import TeamFactory, UserFactory, member_of

pytest_plugins = ["tests.fixtures.celery_worker", "tests.fixtures.live_browser"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The cache outlives a test's database transaction: start every test without it (and
    without the routing table this process kept from the previous test, nor an outage it saw)."""
    cache.clear()
    routing.forget_local()
    outages._down.clear()
    yield


@pytest.fixture(scope="session")
def _demo_snapshot(django_db_setup, django_db_blocker) -> demo_snapshot.Snapshot:
    with django_db_blocker.unblock():
        return demo_snapshot.take()


@pytest.fixture
def seeded_demo(request, db, _demo_snapshot):
    """The demo as `seed_demo` makes it (tests/demo_snapshot.py): its rows in this test's database,
    and the context `lindy.demo.seed()` returns. Not for a transactional test: after another one has
    emptied the database, rows made since have other keys than the snapshot's (call demo.seed())."""
    marker = request.node.get_closest_marker("django_db")
    if (marker and marker.kwargs.get("transaction")) or {"transactional_db", "live_server"} & set(request.fixturenames):
        raise pytest.UsageError("seeded_demo is for tests in a rolled-back transaction; call demo.seed() here")
    return demo_snapshot.restore(_demo_snapshot)


class Cast:
    """Two teams and every role: the people the permission matrix is about."""

    def __init__(self):
        self.team = TeamFactory(name="Acme")
        self.other_team = TeamFactory(name="Globex")
        self.admin = member_of(self.team, Membership.Role.ADMIN, email="admin@acme.example")
        self.member = member_of(self.team, Membership.Role.MEMBER, email="member@acme.example", is_internal=True)
        self.other_admin = member_of(self.other_team, Membership.Role.ADMIN, email="admin@globex.example")
        self.support = UserFactory(email="support@lindy.example", is_support=True)
        self.superuser = UserFactory(email="root@lindy.example", is_superuser=True, is_staff=True)


@pytest.fixture
def seam():
    """`seam.user_message_sender = fn` (or `inbound_handler`) swaps a lindy.seams hook until the test
    ends (tests/seams.py)."""
    with seams.replaced():
        yield seams.Seam()


@pytest.fixture
def cast(db) -> Cast:
    return Cast()


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


class ApiClient:
    """A bearer-token JSON client, the way machine clients call /api/."""

    def __init__(self, user):
        _, self.token = services.api_token_create(user=user)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {self.token}")

    def get(self, path, **params):
        return self.client.get(path, params)

    def post(self, path, data=None, raw: str | bytes | None = None):
        import json

        body = raw if raw is not None else json.dumps(data if data is not None else {})
        return self.client.post(path, body, content_type="application/json")

    def put(self, path, data=None, raw=None):
        import json

        body = raw if raw is not None else json.dumps(data if data is not None else {})
        return self.client.put(path, body, content_type="application/json")

    def delete(self, path):
        return self.client.delete(path)


@pytest.fixture
def api_for(db):
    return ApiClient
