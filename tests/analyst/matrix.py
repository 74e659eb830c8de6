from tests.role_matrix import TEAM_ADMIN_PAGE, Case, page


def failure_group(cast) -> int:
    """A failure group that touched the cast's team, raised by the product's own code."""
    from tests.analyst.failure_helpers import raise_in_gmail_parser

    return raise_in_gmail_parser(user=cast.member, team=cast.team).pk


# Members see no failures; support staff the counts only (the list, never a group's page); a team
# admin the groups that touched their team (another team's answer 404); changes are staff's.
FAILURE_LIST = page(200, member=403)
FAILURE_PAGE = page(200, member=403, outsider=404, support=403)
FAILURE_CHANGE = page(403, superuser=302)

CASES = [
    # Scores link to tasks and quote what the agent did: not for support, whatever teams they administer.
    Case("analyst/", "GET", "/analyst/", {**TEAM_ADMIN_PAGE, "support_admin": 404}),
    Case("analyst/failures/", "GET", "/analyst/failures/", FAILURE_LIST),
    Case("analyst/failures/<int:group_id>/", "GET", lambda cast: f"/analyst/failures/{failure_group(cast)}/",
         FAILURE_PAGE),
    Case("analyst/failures/<int:group_id>/issue.md", "GET",
         lambda cast: f"/analyst/failures/{failure_group(cast)}/issue.md", FAILURE_PAGE),
    Case("analyst/failures/<int:group_id>/status/", "POST",
         lambda cast: f"/analyst/failures/{failure_group(cast)}/status/", FAILURE_CHANGE,
         body={"status": "acknowledged"}, json=False),
    Case("analyst/failures/<int:group_id>/triage/", "POST",
         lambda cast: f"/analyst/failures/{failure_group(cast)}/triage/", FAILURE_CHANGE, json=False),
    Case("analyst/failures/<int:group_id>/file/", "POST",
         lambda cast: f"/analyst/failures/{failure_group(cast)}/file/", FAILURE_CHANGE, json=False),
]
