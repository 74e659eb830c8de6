"""Hydration's rows of the role matrix: every hydration page and endpoint, for every role.

The shared matrix (tests/lindy/test_role_matrix.py) asks each app to add its URLs; these
are hydration's, checked here against the same roles and client."""

from __future__ import annotations

import json

import pytest

from hydration import services, tasks
from tests.lindy.test_role_matrix import ROLES, Case, _client, everyone

LOGIN = 302
MEMORY_READ = everyone(404, anonymous=LOGIN, member=200, admin=200)
MEMORY_READ_API = everyone(404, anonymous=401, member=200, admin=200)
MEMORY_USER_REDIRECT = everyone(302, support=404, superuser=404)

CASES = [
    Case("hydration/", "GET", "/hydration/", everyone(200, anonymous=LOGIN, support=404, superuser=404)),
    Case("hydration/<int:fs_id>/", "GET", "/hydration/{team_fs}/", MEMORY_READ),
    Case("hydration/<int:fs_id>/run", "POST", "/hydration/{team_fs}/run",
         everyone(404, anonymous=LOGIN, member=403, admin=302), json=False),
    Case("hydration/<int:fs_id>/sources/<str:source>", "POST", "/hydration/{team_fs}/sources/meetings",
         everyone(404, anonymous=LOGIN, member=403, admin=302), body={"enabled": "on"}, json=False),
    Case("hydration/<int:fs_id>/revisions/<int:revision_id>/why", "GET",
         "/hydration/{team_fs}/revisions/{revision}/why", MEMORY_READ),
    Case("hydration/<int:fs_id>/why/<path:path>", "GET", "/hydration/{team_fs}/why/index.md", MEMORY_READ),
    Case("hydration/runs/<int:run_id>/", "GET", "/hydration/runs/{run}/", MEMORY_READ),
    Case("hydration/gmail/connect", "POST", "/hydration/gmail/connect", MEMORY_USER_REDIRECT, json=False),
    Case("hydration/gmail/callback", "GET", "/hydration/gmail/callback", MEMORY_USER_REDIRECT),
    Case("hydration/gmail/disconnect", "POST", "/hydration/gmail/disconnect", MEMORY_USER_REDIRECT, json=False),
    Case("api/hydration/filesystems/<fs_id>/sources", "GET", "/api/hydration/filesystems/{team_fs}/sources",
         MEMORY_READ_API),
    Case("api/hydration/filesystems/<fs_id>/sources/<source>", "PUT",
         "/api/hydration/filesystems/{team_fs}/sources/meetings", everyone(404, anonymous=401, member=403, admin=200),
         body={"enabled": True}),
    Case("api/hydration/filesystems/<fs_id>/runs", "GET", "/api/hydration/filesystems/{team_fs}/runs", MEMORY_READ_API),
    Case("api/hydration/filesystems/<fs_id>/runs", "POST", "/api/hydration/filesystems/{team_fs}/runs",
         everyone(404, anonymous=401, member=403, admin=200)),
    Case("api/hydration/runs/<run_id>", "GET", "/api/hydration/runs/{run}", MEMORY_READ_API),
    Case("api/hydration/runs/<run_id>/items", "GET", "/api/hydration/runs/{run}/items", MEMORY_READ_API),
]


def test_every_hydration_url_has_a_row():
    from tests.lindy.test_role_matrix import _patterns

    mine = {p for p in _patterns() if p.startswith(("hydration/", "api/hydration/"))}
    assert mine == {case.pattern for case in CASES}


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.method} {c.path}")
def test_hydration_role_matrix(cast, case: Case, role: str, monkeypatch):
    monkeypatch.setattr(tasks.hydrate, "delay", lambda run_id: None)
    team_fs = cast.team.memory_filesystem
    # A live run on the team memory: "Run now" answers with it (302 page, 200 API).
    run, _ = services.run_trigger(filesystem=team_fs, trigger="schedule", enqueue=False)
    revision = team_fs.revisions.first()
    path = case.path.format(team_fs=team_fs.pk, run=run.pk, revision=revision.pk)
    client = _client(cast, role)
    if case.method == "GET":
        response = client.get(path)
    elif case.json:
        response = getattr(client, case.method.lower())(path, json.dumps(case.body or {}),
                                                       content_type="application/json")
    else:
        response = client.post(path, case.body or {})
    assert response.status_code == case.expect[role], (role, path, response.content[:300])
