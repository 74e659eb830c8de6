from tests.role_matrix import TEAM_ADMIN_PAGE, Case

CASES = [
    # Scores link to tasks and quote what the agent did: not for support, whatever teams they administer.
    Case("analyst/", "GET", "/analyst/", {**TEAM_ADMIN_PAGE, "support_admin": 404}),
]
