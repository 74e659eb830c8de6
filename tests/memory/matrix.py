"""Memory: a user reads and edits their own; members read the team's; team admins edit it;
support staff and other teams see none of it (404). Reading is not editing (403). Previews
and the budgets page are read-only for readers."""

from memory import services
from tests.role_matrix import Case, api, page


def team_fs(cast) -> int:
    return services.filesystem_for_team(cast.team).pk


def member_fs(cast) -> int:
    return services.filesystem_for_user(cast.member).pk


def team_file(cast) -> tuple[int, int]:
    """(file system id, id of the revision that created people/jane.md and its change)."""
    fs = services.filesystem_for_team(cast.team)
    revision = services.file_write(
        filesystem=fs, path="people/jane.md", content="Jane is Initech's CTO.", base_version=None,
        author_kind="person", author=cast.admin, index_description="Jane Park",
    )
    return fs.pk, revision.pk


def _change_id(revision_id: int) -> int:
    from memory.models import FileChange

    return FileChange.objects.filter(revision_id=revision_id, path="people/jane.md").values_list("pk", flat=True).get()


TEAM_READ = page(404, member=200, admin=200)
TEAM_EDIT = page(404, member=403, admin=200)
TEAM_READ_API = api(404, member=200, admin=200)
TEAM_EDIT_API = api(404, member=403, admin=200)
OWN_ONLY = page(404, member=200)
MEMORY_HOME = page(200, support=404, superuser=404)

CASES = [
    Case("memory/", "GET", "/memory/", MEMORY_HOME),
    Case("memory/context/", "GET", "/memory/context/", MEMORY_HOME),
    Case("memory/<int:fs_id>/", "GET", lambda c: f"/memory/{team_fs(c)}/", TEAM_READ),
    Case("memory/<int:fs_id>/", "GET", lambda c: f"/memory/{member_fs(c)}/", OWN_ONLY),
    Case("memory/<int:fs_id>/files/<path:path>", "GET", lambda c: f"/memory/{team_file(c)[0]}/files/people/jane.md", TEAM_READ),
    Case("memory/<int:fs_id>/files/<path:path>", "GET", lambda c: f"/memory/{member_fs(c)}/files/index.md", OWN_ONLY),
    Case("memory/<int:fs_id>/edit/<path:path>", "GET", lambda c: f"/memory/{team_fs(c)}/edit/index.md", TEAM_EDIT),
    Case("memory/<int:fs_id>/edit/<path:path>", "GET", lambda c: f"/memory/{member_fs(c)}/edit/index.md", OWN_ONLY),
    Case("memory/<int:fs_id>/new", "GET", lambda c: f"/memory/{team_fs(c)}/new", TEAM_EDIT),
    Case("memory/<int:fs_id>/preview", "POST", lambda c: f"/memory/{team_fs(c)}/preview", TEAM_READ, body={"content": "# Hi"}, json=False),
    Case("memory/<int:fs_id>/move/<path:path>", "GET", lambda c: f"/memory/{team_file(c)[0]}/move/people/jane.md", TEAM_EDIT),
    Case("memory/<int:fs_id>/delete/<path:path>", "GET", lambda c: f"/memory/{team_file(c)[0]}/delete/people/jane.md", TEAM_EDIT),
    Case("memory/<int:fs_id>/history/<path:path>", "GET", lambda c: f"/memory/{team_file(c)[0]}/history/people/jane.md", TEAM_READ),
    Case("memory/<int:fs_id>/revisions/", "GET", lambda c: f"/memory/{team_fs(c)}/revisions/", TEAM_READ),
    Case("memory/<int:fs_id>/revisions/<int:revision_id>/", "GET",
         lambda c: "/memory/{}/revisions/{}/".format(*team_file(c)), TEAM_READ),
    Case("memory/<int:fs_id>/revisions/<int:revision_id>/revert", "POST",
         lambda c: "/memory/{}/revisions/{}/revert".format(*team_file(c)), page(404, member=403, admin=302), json=False),
    Case("memory/<int:fs_id>/changes/<int:change_id>/restore", "POST",
         lambda c: (lambda fs, rev: f"/memory/{fs}/changes/{_change_id(rev)}/restore")(*team_file(c)),
         page(404, member=403, admin=302), json=False),
    Case("memory/<int:fs_id>/changes/<int:change_id>/revert", "POST",
         lambda c: (lambda fs, rev: f"/memory/{fs}/changes/{_change_id(rev)}/revert")(*team_file(c)),
         page(404, member=403, admin=302), json=False),
    Case("memory/<int:fs_id>/export.zip", "GET", lambda c: f"/memory/{team_fs(c)}/export.zip", TEAM_READ),
    Case("memory/<int:fs_id>/import", "GET", lambda c: f"/memory/{team_fs(c)}/import", TEAM_EDIT),
    Case("memory/<int:fs_id>/settings", "GET", lambda c: f"/memory/{team_fs(c)}/settings", TEAM_READ),  # budgets: read by members, changed by admins
    Case("api/memory/filesystems", "GET", "/api/memory/filesystems", api(200)),
    Case("api/memory/filesystems/<fs_id>/files", "GET", lambda c: f"/api/memory/filesystems/{team_fs(c)}/files", TEAM_READ_API),
    Case("api/memory/filesystems/<fs_id>/files", "GET", lambda c: f"/api/memory/filesystems/{member_fs(c)}/files", api(404, member=200)),
    Case("api/memory/filesystems/<fs_id>/files/<path:path>", "GET",
         lambda c: f"/api/memory/filesystems/{team_fs(c)}/files/index.md", TEAM_READ_API),
    Case("api/memory/filesystems/<fs_id>/files/<path:path>", "PUT",
         lambda c: f"/api/memory/filesystems/{team_fs(c)}/files/notes.md", api(404, member=403, admin=200),
         body={"content": "Notes", "index_description": "Notes"}),
    Case("api/memory/filesystems/<fs_id>/files/<path:path>", "DELETE",
         lambda c: f"/api/memory/filesystems/{team_file(c)[0]}/files/people/jane.md?update_links=true", TEAM_EDIT_API),
    Case("api/memory/filesystems/<fs_id>/moves", "POST", lambda c: f"/api/memory/filesystems/{team_file(c)[0]}/moves",
         TEAM_EDIT_API, body={"from": "people/jane.md", "to": "people/jane-park.md"}),
    Case("api/memory/filesystems/<fs_id>/export", "GET", lambda c: f"/api/memory/filesystems/{team_fs(c)}/export", TEAM_READ_API),
    # Without a file every signed-in caller gets the schema's 422 before any lookup (nothing is read).
    Case("api/memory/filesystems/<fs_id>/import", "POST", lambda c: f"/api/memory/filesystems/{team_fs(c)}/import", api(422)),
    Case("api/memory/filesystems/<fs_id>/verify", "GET", lambda c: f"/api/memory/filesystems/{team_fs(c)}/verify", TEAM_READ_API),
    Case("api/memory/filesystems/<fs_id>/revisions", "GET", lambda c: f"/api/memory/filesystems/{team_fs(c)}/revisions", TEAM_READ_API),
    Case("api/memory/filesystems/<fs_id>/revisions/<revision_id>", "GET",
         lambda c: "/api/memory/filesystems/{}/revisions/{}".format(*team_file(c)), TEAM_READ_API),
    Case("api/memory/filesystems/<fs_id>/revisions/<revision_id>/revert", "POST",
         lambda c: "/api/memory/filesystems/{}/revisions/{}/revert".format(*team_file(c)), TEAM_EDIT_API),
]
