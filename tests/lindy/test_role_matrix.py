"""What each role can and cannot reach, for every page and endpoint.

`test_every_url_is_in_the_matrix` fails when a URL is added without a row here: each app adds
its rows as it lands. Another team's objects answer 404; support staff never reach memory,
messages or actions.
"""

from __future__ import annotations

import importlib
import json
import pkgutil

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

import tests
from lindy import services
from tests.role_matrix import ROLES, Case


def _all_cases() -> list[Case]:
    cases = []
    for module in pkgutil.iter_modules(tests.__path__):
        if module.ispkg:
            try:
                matrix = importlib.import_module(f"tests.{module.name}.matrix")
            except ModuleNotFoundError as exc:
                if exc.name != f"tests.{module.name}.matrix":
                    raise
                continue
            cases.extend(matrix.CASES)
    return cases


CASES = _all_cases()
# Patterns with no page of their own to check here.
EXEMPT = {"admin/"}


def _patterns(resolver=None, prefix=""):
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                yield prefix + str(entry.pattern)
                continue
            yield from _patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern)


def test_every_url_is_in_the_matrix():
    covered = {case.pattern for case in CASES}
    missing = sorted(set(_patterns()) - covered - EXEMPT)
    assert not missing, f"Add these URLs to the role matrix: {missing}"


def _client(cast, role: str) -> Client:
    if role == "anonymous":
        return Client()
    user = {
        "member": cast.member, "admin": cast.admin, "outsider": cast.other_admin,
        "support": cast.support, "superuser": cast.superuser,
    }[role]
    _, token = services.api_token_create(user=user)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    client.force_login(user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_role_matrix(cast, case: Case, role: str):
    path = case.path if isinstance(case.path, str) else case.path(cast)
    client = _client(cast, role)
    if case.method in ("GET", "DELETE"):
        response = client.generic(case.method, path)
    elif case.json:
        response = client.generic(case.method, path, json.dumps(case.body or {}), content_type="application/json")
    else:
        response = client.post(path, case.body or {})
    assert response.status_code == case.expect[role], (role, path, response.content[:300])


@pytest.mark.django_db
@pytest.mark.parametrize(
    "role, visible, hidden",
    [
        ("member", {"tasks", "meetings"}, {"admin"}),
        ("admin", {"tasks", "meetings"}, {"admin"}),
        ("support", set(), {"tasks", "meetings", "admin"}),
        ("superuser", {"admin"}, {"tasks", "meetings"}),
    ],
)
def test_navigation_shows_what_the_role_may_use(cast, role, visible, hidden):
    from lindy import navigation

    user = {"member": cast.member, "admin": cast.admin, "support": cast.support, "superuser": cast.superuser}[role]
    keys = {item["key"] for item in navigation.items_for(user)}
    assert visible <= keys
    assert not (hidden & keys)
    html = _client(cast, role).get("/").content.decode()
    for key in visible:
        assert f'data-nav="{key}"' in html
    for key in hidden:
        assert f'data-nav="{key}"' not in html
