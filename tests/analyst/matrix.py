from tests.role_matrix import TEAM_ADMIN_PAGE, Case

CASES = [
    Case("analyst/", "GET", "/analyst/", TEAM_ADMIN_PAGE),
]
