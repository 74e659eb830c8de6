"""Hydration: members read the team memory's sources, runs and provenance; team admins run
and configure them; users connect their own Gmail. Support and other teams get 404."""

from hydration import services
from tests.role_matrix import Case, everyone

LOGIN = 302
MEMORY_READ = everyone(404, anonymous=LOGIN, member=200, admin=200)
MEMORY_READ_API = everyone(404, anonymous=401, member=200, admin=200)
MEMORY_USER_REDIRECT = everyone(302, support=404, superuser=404)


def _live_run(cast):
    """A queued run on the team memory (not enqueued): "Run now" answers with it."""
    team_fs = cast.team.memory_filesystem
    run, _ = services.run_trigger(filesystem=team_fs, trigger="schedule", enqueue=False)
    return team_fs, run


def fill(template: str):
    def build(cast) -> str:
        team_fs, run = _live_run(cast)
        return template.format(team_fs=team_fs.pk, run=run.pk, revision=team_fs.revisions.first().pk)

    return build


CASES = [
    Case("hydration/", "GET", "/hydration/", everyone(200, anonymous=LOGIN, support=404, superuser=404)),
    Case("hydration/<int:fs_id>/", "GET", fill("/hydration/{team_fs}/"), MEMORY_READ),
    Case("hydration/<int:fs_id>/run", "POST", fill("/hydration/{team_fs}/run"),
         everyone(404, anonymous=LOGIN, member=403, admin=302), json=False),
    Case("hydration/<int:fs_id>/sources/<str:source>", "POST", fill("/hydration/{team_fs}/sources/meetings"),
         everyone(404, anonymous=LOGIN, member=403, admin=302), body={"enabled": "on"}, json=False),
    Case("hydration/<int:fs_id>/revisions/<int:revision_id>/why", "GET",
         fill("/hydration/{team_fs}/revisions/{revision}/why"), MEMORY_READ),
    Case("hydration/<int:fs_id>/why/<path:path>", "GET", fill("/hydration/{team_fs}/why/index.md"), MEMORY_READ),
    Case("hydration/runs/<int:run_id>/", "GET", fill("/hydration/runs/{run}/"), MEMORY_READ),
    Case("hydration/gmail/connect", "POST", "/hydration/gmail/connect", MEMORY_USER_REDIRECT, json=False),
    Case("hydration/gmail/callback", "GET", "/hydration/gmail/callback", MEMORY_USER_REDIRECT),
    Case("hydration/gmail/disconnect", "POST", "/hydration/gmail/disconnect", MEMORY_USER_REDIRECT, json=False),
    Case("hydration/gmail/actions-off", "POST", "/hydration/gmail/actions-off", MEMORY_USER_REDIRECT,
         body={"purpose": "gmail_actions"}, json=False),
    Case("api/hydration/filesystems/<fs_id>/sources", "GET", fill("/api/hydration/filesystems/{team_fs}/sources"),
         MEMORY_READ_API),
    Case("api/hydration/filesystems/<fs_id>/sources/<source>", "PUT",
         fill("/api/hydration/filesystems/{team_fs}/sources/meetings"), everyone(404, anonymous=401, member=403, admin=200),
         body={"enabled": True}),
    Case("api/hydration/filesystems/<fs_id>/runs", "GET", fill("/api/hydration/filesystems/{team_fs}/runs"), MEMORY_READ_API),
    Case("api/hydration/filesystems/<fs_id>/runs", "POST", fill("/api/hydration/filesystems/{team_fs}/runs"),
         everyone(404, anonymous=401, member=403, admin=200)),
    Case("api/hydration/runs/<run_id>", "GET", fill("/api/hydration/runs/{run}"), MEMORY_READ_API),
    Case("api/hydration/runs/<run_id>/items", "GET", fill("/api/hydration/runs/{run}/items"), MEMORY_READ_API),
]

