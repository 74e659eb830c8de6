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
from lindy.models import Membership
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


def _support_admin(cast):
    """A support user who is also an admin of the cast's team (made once per test)."""
    from tests.factories import UserFactory

    if getattr(cast, "support_admin", None) is None:
        cast.support_admin = UserFactory(email="support-admin@lindy.example", is_support=True)
        services.membership_set(team=cast.team, user=cast.support_admin, role=Membership.Role.ADMIN)
    return cast.support_admin


def _client(cast, role: str) -> Client:
    if role == "anonymous":
        return Client()
    if role == "support_admin":
        user = _support_admin(cast)
    else:
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


# Support staff never read bodies — task events, meeting notes, memory, messages — whatever teams
# they are in. The same support user is made a member (and then an admin) of Acme; a plain member
# of Acme reads every one of these bodies, the support user none of them.
TASK_BODY = "Wire 40,000 USD to the new supplier account."
MEETING_BODY = "Board meeting: the acquisition closes in March."
MEMORY_BODY = "Jane's home address is 12 Elm Street."
# Names in the cast come from Faker, so a body to look for must be a phrase no generated name contains.
CONTEXT_BODY = "Jane Quillfeather, supplier contact"
LISTS = {"/api/meetings"}


def _bodies(cast) -> dict[str, str]:
    from lindy.models import AgentTask
    from memory import services as memory_services
    from tests.factories import AgentTaskFactory, MeetingFactory, TaskEventFactory

    task = AgentTaskFactory(team=cast.team, owner=cast.admin, visibility=AgentTask.Visibility.PUBLIC)
    TaskEventFactory(task=task, content=TASK_BODY)
    meeting = MeetingFactory(team=cast.team, owner=cast.admin, public=True, notes=MEETING_BODY)
    fs = memory_services.filesystem_for_team(cast.team)
    memory_services.file_write(filesystem=fs, path="people/jane.md", content=MEMORY_BODY, base_version=None,
                               author_kind="person", author=cast.admin,
                               index_description=CONTEXT_BODY)
    return {
        f"/tasks/{task.pk}/": TASK_BODY,
        f"/api/tasks/{task.pk}": TASK_BODY,
        f"/meetings/{meeting.pk}/": MEETING_BODY,
        f"/api/meetings/{meeting.pk}": MEETING_BODY,
        "/api/meetings": MEETING_BODY,
        f"/memory/{fs.pk}/files/people/jane.md": MEMORY_BODY,
        f"/api/memory/filesystems/{fs.pk}/files/people/jane.md": MEMORY_BODY,
        "/memory/context/": CONTEXT_BODY,
    }


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Membership.Role.MEMBER, Membership.Role.ADMIN])
def test_support_staff_in_a_team_never_read_bodies(cast, role):
    bodies = _bodies(cast)
    services.membership_set(team=cast.team, user=cast.support, role=role)
    member, support = _client(cast, "member"), _client(cast, "support")
    for path, body in bodies.items():
        seen = member.get(path)
        assert seen.status_code == 200 and body in seen.content.decode(), path  # the body is there to read
        refused = support.get(path)
        # A list answers an empty list (200); everything else is absent (404).
        expected = (200, 404) if path in LISTS else (404,)
        assert refused.status_code in expected and body not in refused.content.decode(), (path, refused.status_code)


# What a team admin reviews carries bodies too: an eval candidate (a decision's history and action
# arguments) and the analyst's scores (what the agent did). The admin reads them; a support user who
# is also an admin of the same team reads none (the one rule: lindy.permissions.workspace_admin_team_ids).
@pytest.mark.django_db
def test_support_staff_who_administer_a_team_never_read_what_admins_review(cast):
    from analyst.models import TaskScore
    from tests.validator.matrix import candidate

    candidate_id = candidate(cast)
    task = _scored_task(cast)
    # A public task: the admin reads its title and the analyst's why (of a member's private task the
    # admin reads only the numbers, tests/analyst/test_page.py).
    task.visibility = "public"
    task.save()
    TaskScore.objects.create(team=cast.team, task=task, from_seq=1, through_seq=1, score=0.2, did_what_asked=0.0,
                             summary="Wired the money to the supplier nobody asked for.")
    admin, support_admin = _client(cast, "admin"), _client(cast, "support_admin")
    reads = {
        "/validator/evals/candidates/": "NW-1",
        "/analyst/": "Wired the money",
    }
    for path, body in reads.items():
        seen = admin.get(path)
        assert seen.status_code == 200 and body in seen.content.decode(), path
        refused = support_admin.get(path)
        assert refused.status_code == 404 and body not in refused.content.decode(), (path, refused.status_code)
    review = support_admin.post(f"/validator/evals/candidates/{candidate_id}/review/", {"verdict": "accept"})
    assert review.status_code == 404


def _scored_task(cast):
    from tests.factories import AgentTaskFactory, TaskEventFactory

    task = AgentTaskFactory(team=cast.team, owner=cast.member)
    TaskEventFactory(task=task, content="Pay the supplier.")
    return task
