from tests.factories import AgentTaskFactory, MeetingFactory
from tests.role_matrix import TEAM_ADMIN_PAGE, Case, api, everyone, page


def private_task(cast) -> int:
    return AgentTaskFactory(team=cast.team, owner=cast.member, visibility="private").pk


def private_meeting(cast) -> int:
    return MeetingFactory(team=cast.team, owner=cast.member, public=False).pk


# The member owns a private task and a private meeting; nobody else may see them.
OWN_ONLY = page(404, member=200)
OWN_ONLY_API = api(404, member=200)
WORKSPACE = page(200, support=404, superuser=404)

CASES = [
    Case("", "GET", "/", page(200)),
    Case("accounts/login/", "GET", "/accounts/login/", everyone(302, anonymous=200)),
    Case("accounts/logout/", "POST", "/accounts/logout/", everyone(302), json=False),
    # Forgot password: open to anyone (Django's views); an unknown address is sent on like a known one.
    Case("accounts/password-reset/", "GET", "/accounts/password-reset/", everyone(200)),
    Case("accounts/password-reset/", "POST", "/accounts/password-reset/", everyone(302),
         body={"email": "nobody@nowhere.example"}, json=False),
    Case("accounts/password-reset/sent/", "GET", "/accounts/password-reset/sent/", everyone(200)),
    Case("accounts/reset/<uidb64>/<token>/", "GET", "/accounts/reset/MQ/not-a-token/", everyone(200)),
    Case("accounts/reset/done/", "GET", "/accounts/reset/done/", everyone(200)),
    # One's own profile (the display name): every signed-in person, their own row only.
    Case("accounts/profile/", "GET", "/accounts/profile/", page(200)),
    Case("accounts/profile/", "POST", "/accounts/profile/", page(302), body={"name": "A. Person"}, json=False),
    Case("tasks/", "GET", "/tasks/", WORKSPACE),
    Case("tasks/<int:task_id>/", "GET", lambda cast: f"/tasks/{private_task(cast)}/", OWN_ONLY),
    Case("meetings/", "GET", "/meetings/", WORKSPACE),
    Case("meetings/<int:meeting_id>/", "GET", lambda cast: f"/meetings/{private_meeting(cast)}/", OWN_ONLY),
    # The audit log: a team admin reads their team's entries, a superuser all; support (even a
    # team's admin) and members get 404.
    Case("audit/", "GET", "/audit/", TEAM_ADMIN_PAGE),
    Case("healthz", "GET", "/healthz", everyone(200)),
    Case("favicon.ico", "GET", "/favicon.ico", everyone(301)),  # to the static icon, for everyone
    Case("readyz", "GET", "/readyz", everyone(200)),
    Case("metrics", "GET", "/metrics", everyone(401)),  # a bearer token or an internal address, not a login
    Case("admin/", "GET", "/admin/", everyone(302, superuser=200)),
    Case("api/openapi.json", "GET", "/api/openapi.json", everyone(200)),
    Case("api/docs", "GET", "/api/docs", everyone(200)),
    Case("api/", "GET", "/api/", everyone(404)),
    Case("api/me", "GET", "/api/me", api(200)),
    Case("api/tasks", "GET", "/api/tasks", api(200)),
    Case("api/tasks", "POST", "/api/tasks", api(201, support=404, superuser=404), body={"title": "New"}),
    Case("api/tasks/<task_id>", "GET", lambda cast: f"/api/tasks/{private_task(cast)}", OWN_ONLY_API),
    Case("api/tasks/<task_id>/events", "POST", lambda cast: f"/api/tasks/{private_task(cast)}/events",
         api(404, member=201), body={"actor": "user", "content": "hi"}),
    Case("api/meetings", "GET", "/api/meetings", api(200)),
    Case("api/meetings", "POST", "/api/meetings", api(201, support=404, superuser=404),
         body={"title": "Sync", "occurred_at": "2026-11-20T10:00:00Z"}),
    Case("api/meetings/<meeting_id>", "GET", lambda cast: f"/api/meetings/{private_meeting(cast)}", OWN_ONLY_API),
]
