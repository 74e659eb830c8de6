"""What each role can and cannot reach, for every page and endpoint.

`test_every_url_is_in_the_matrix` fails when a URL is added without a row here: each app adds
its rows as it lands. Another team's objects answer 404; support staff never reach memory,
messages or actions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from lindy import services
from tests.factories import AgentTaskFactory, MeetingFactory

ROLES = ["anonymous", "member", "admin", "outsider", "support", "superuser"]


@dataclass
class Case:
    pattern: str  # the URL pattern as Django prints it
    method: str
    path: str  # may use {task} and {meeting}
    expect: dict[str, int]  # role -> status
    body: dict | None = None
    json: bool = True
    extra: dict = field(default_factory=dict)


def everyone(status: int, **overrides) -> dict[str, int]:
    return {role: overrides.get(role, status) for role in ROLES}


LOGIN_REDIRECT = 302
# The member owns a private task and a private meeting; nobody else may see them.
OWN_ONLY = everyone(404, anonymous=LOGIN_REDIRECT, member=200)
OWN_ONLY_API = everyone(404, anonymous=401, member=200)
WORKSPACE_PAGE = everyone(200, anonymous=LOGIN_REDIRECT, support=404, superuser=404)

CASES = [
    Case("", "GET", "/", everyone(200, anonymous=LOGIN_REDIRECT)),
    Case("accounts/login/", "GET", "/accounts/login/", everyone(302, anonymous=200)),
    Case("accounts/logout/", "POST", "/accounts/logout/", everyone(302), json=False),
    Case("tasks/", "GET", "/tasks/", WORKSPACE_PAGE),
    Case("tasks/<int:task_id>/", "GET", "/tasks/{task}/", OWN_ONLY),
    Case("meetings/", "GET", "/meetings/", WORKSPACE_PAGE),
    Case("meetings/<int:meeting_id>/", "GET", "/meetings/{meeting}/", OWN_ONLY),
    Case("healthz", "GET", "/healthz", everyone(200)),
    Case("admin/", "GET", "/admin/", everyone(302, superuser=200)),
    Case("api/openapi.json", "GET", "/api/openapi.json", everyone(200)),
    Case("api/docs", "GET", "/api/docs", everyone(200)),
    Case("api/", "GET", "/api/", everyone(404)),
    Case("api/me", "GET", "/api/me", everyone(200, anonymous=401)),
    Case("api/tasks", "GET", "/api/tasks", everyone(200, anonymous=401)),
    Case("api/tasks", "POST", "/api/tasks", everyone(201, anonymous=401, support=404, superuser=404), body={"title": "New"}),
    Case("api/tasks/<task_id>", "GET", "/api/tasks/{task}", OWN_ONLY_API),
    Case("api/tasks/<task_id>/events", "POST", "/api/tasks/{task}/events", everyone(404, anonymous=401, member=201),
         body={"actor": "user", "content": "hi"}),
    Case("api/meetings", "GET", "/api/meetings", everyone(200, anonymous=401)),
    Case("api/meetings", "POST", "/api/meetings", everyone(201, anonymous=401, support=404, superuser=404),
         body={"title": "Sync", "occurred_at": "2026-11-20T10:00:00Z"}),
    Case("api/meetings/<meeting_id>", "GET", "/api/meetings/{meeting}", OWN_ONLY_API),
]

# Patterns with no page of their own to check here.
EXEMPT = {"api/", "admin/"}


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
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.method} {c.path}")
def test_role_matrix(cast, case: Case, role: str):
    task = AgentTaskFactory(team=cast.team, owner=cast.member, visibility="private")
    meeting = MeetingFactory(team=cast.team, owner=cast.member, public=False)
    path = case.path.format(task=task.pk, meeting=meeting.pk)
    client = _client(cast, role)
    if case.method == "GET":
        response = client.get(path)
    elif case.json:
        response = client.post(path, json.dumps(case.body or {}), content_type="application/json")
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
