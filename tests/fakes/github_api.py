"""A local server speaking GitHub's REST API for issues: POST /repos/{owner}/{repo}/issues with a
bearer token (201 with the issue: number, html_url, url, title, body, state), as documented at
https://docs.github.com/en/rest/issues/issues#create-an-issue. A wrong token answers 401 (Bad
credentials), an unknown repository 404, a missing title 422 (Validation Failed)."""

from __future__ import annotations

import itertools

from tests.fakes.http import Reply
from tests.fakes.routes import PatternFakeServer

TOKEN = "github_pat_fake_0123456789abcdefghijklmnop"
REPO = "lindy-team/lindy"


class FakeGitHub(PatternFakeServer):
    def __init__(self):
        super().__init__()
        self.issues: list[dict] = []
        self._numbers = itertools.count(1)
        self.route("POST", r"/repos/([\w.-]+)/([\w.-]+)/issues", self._create)

    def settings(self) -> dict:
        return {"ANALYST_GITHUB_API_URL": self.url, "ANALYST_GITHUB_REPO": REPO, "ANALYST_GITHUB_TOKEN": TOKEN}

    def _create(self, recorded, match):
        if recorded.headers.get("authorization") not in (f"Bearer {TOKEN}", f"token {TOKEN}"):
            return Reply(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest",
                               "status": "401"})
        repo = f"{match.group(1)}/{match.group(2)}"
        if repo != REPO:
            return Reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
        data = recorded.json or {}
        if not isinstance(data, dict) or not data.get("title"):
            return Reply(422, {"message": "Validation Failed", "errors": [
                {"resource": "Issue", "code": "missing_field", "field": "title"}], "status": "422"})
        number = next(self._numbers)
        issue = {
            "id": 1000 + number, "number": number, "state": "open", "title": data["title"], "body": data.get("body"),
            "url": f"{self.url}/repos/{repo}/issues/{number}", "html_url": f"https://github.com/{repo}/issues/{number}",
            "labels": data.get("labels") or [], "user": {"login": "lindy-analyst"},
        }
        self.issues.append(issue)
        return Reply(201, issue, {"Location": issue["url"]})
