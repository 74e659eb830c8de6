"""The role matrix's vocabulary. Each app lists its pages and endpoints in
`tests/<app>/matrix.py` as CASES; tests/lindy/test_role_matrix.py runs them all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

ROLES = ["anonymous", "member", "admin", "outsider", "support", "superuser", "support_admin"]
# "support_admin": a support user who is also an admin of the cast's team. Support staff never read
# bodies whatever teams they are in (lindy.permissions.can_use_workspace): unless a row says
# otherwise, this role gets exactly what plain support gets.
LOGIN_REDIRECT = 302


@dataclass
class Case:
    pattern: str  # the URL pattern as Django prints it
    method: str
    # A path, or a function of the cast that creates what the path needs and returns it.
    path: str | Callable[[object], str]
    expect: dict[str, int]  # role -> status
    body: dict | None = None
    json: bool = True

    @property
    def label(self) -> str:
        return f"{self.method} {self.path if isinstance(self.path, str) else self.pattern}"


def everyone(status: int, **overrides: int) -> dict[str, int]:
    expect = {role: overrides.get(role, status) for role in ROLES}
    expect["support_admin"] = overrides.get("support_admin", expect["support"])
    return expect


# Common shapes.
def page(status: int = 200, **overrides: int) -> dict[str, int]:
    return everyone(status, **{"anonymous": LOGIN_REDIRECT, **overrides})


def api(status: int = 200, **overrides: int) -> dict[str, int]:
    return everyone(status, **{"anonymous": 401, **overrides})


SUPERUSER_PAGE = page(404, superuser=200)
TEAM_ADMIN_PAGE = page(404, admin=200, outsider=200, superuser=200)
WORKSPACE_PAGE = page(200, support=404, superuser=404)
