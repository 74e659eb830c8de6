"""Reads never write (issue 27, part 5): every page GET (found from the URL resolver) and every
API GET (from the OpenAPI document), read by a member, their team's admin and support staff over
a world with rows behind every page, runs no INSERT, UPDATE or DELETE; nor does the routing read
path; and an unknown route name is an error, never a new Route row.

Signing in writes, and is not a read of a page: the session and last_login (client_for), and the
API token's last_used_at, touched by authentication at most once a minute (lindy.services): one
API GET before the captured ones takes that touch."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from router import routing
from router.models import Route
from tests.canary import crawl
from tests.conftest import ApiClient, client_for

from .test_canary_crawl import plant

WRITE = re.compile(r"^\s*(WITH\b.*?\)\s*)?(INSERT|UPDATE|DELETE|REPLACE)\b", re.I | re.S)


def _writes(queries) -> list[str]:
    return [q["sql"][:200] for q in queries if WRITE.match(q["sql"])]


class _Recording:
    """A test client whose every GET is captured: the statements that wrote, by path."""

    def __init__(self, client):
        self.client = client
        self.writes: dict[str, list[str]] = {}

    def get(self, path, *args, **kwargs):
        with CaptureQueriesContext(connection) as captured:
            response = self.client.get(path, *args, **kwargs)
        if writes := _writes(captured.captured_queries):
            self.writes[path] = writes
        return response


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["member", "admin", "support"])
def test_no_page_or_api_get_writes(cast, role):
    canaries, fill = plant(cast)
    user = getattr(cast, role)
    api_client = ApiClient(user).client
    assert api_client.get("/api/me").status_code == 200  # the token's once-a-minute touch
    pages, api = _Recording(client_for(user)), _Recording(api_client)
    _, visited = crawl(pages, fill, canaries, api_client=api)
    assert len(visited) > 50  # the crawl really read the product
    assert pages.writes == {} and api.writes == {}


@pytest.mark.django_db
def test_the_routing_read_path_writes_nothing(cast):
    routing.assign("agent", cast.member)  # warm: the table as another process left it
    routing.forget_local()
    with CaptureQueriesContext(connection) as captured:
        for route in routing.registered_routes():
            routing.assign(route, cast.member)
            routing.assign(route)
    assert _writes(captured.captured_queries) == []


@pytest.mark.django_db
def test_an_unknown_route_is_an_error_not_a_new_row(cast):
    before = Route.objects.count()
    with pytest.raises(routing.UnknownRoute, match="no app registers it"):
        routing.assign("no.such.route", cast.member)
    assert Route.objects.count() == before and not Route.objects.filter(name="no.such.route").exists()
