"""'File issue': the report becomes an issue through GitHub's REST API (POST
/repos/{owner}/{repo}/issues), once per group however often it is pressed, and the group links it."""

from __future__ import annotations

from datetime import timedelta

import httpx
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from ..models import FailureGroup

TIMEOUT = 20
# A claim older than this is a filing that died half way: another press may try again.
CLAIM_TIMEOUT = timedelta(minutes=5)


class FilingError(Exception):
    pass


def configured() -> bool:
    return bool(settings.ANALYST_GITHUB_REPO and settings.ANALYST_GITHUB_TOKEN)


def issue_file(*, group: FailureGroup, title: str, body: str) -> str:
    """The issue's URL: the one already filed, or a new one. Raises FilingError."""
    if not configured():
        raise FilingError("Set ANALYST_GITHUB_REPO and ANALYST_GITHUB_TOKEN to file issues.")
    if group.issue_url:
        return group.issue_url
    now = timezone.now()
    # The claim: of two presses at once, one files; the other finds the link (or the claim) after.
    claimed = FailureGroup.objects.filter(pk=group.pk, issue_url="").filter(
        Q(issue_claimed_at__isnull=True) | Q(issue_claimed_at__lt=now - CLAIM_TIMEOUT)).update(issue_claimed_at=now)
    if not claimed:
        group.refresh_from_db()
        if group.issue_url:
            return group.issue_url
        raise FilingError("This group's issue is being filed: reload in a moment.")
    url = f"{settings.ANALYST_GITHUB_API_URL.rstrip('/')}/repos/{settings.ANALYST_GITHUB_REPO}/issues"
    headers = {"Authorization": f"Bearer {settings.ANALYST_GITHUB_TOKEN}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28"}
    try:
        response = httpx.post(url, json={"title": title[:256], "body": body}, headers=headers, timeout=TIMEOUT)
        if response.status_code != 201:
            raise FilingError(f"GitHub answered {response.status_code}: {response.text[:200]}")
        data = response.json()
        issue_url, number = str(data["html_url"]), int(data["number"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        FailureGroup.objects.filter(pk=group.pk, issue_claimed_at=now).update(issue_claimed_at=None)
        raise FilingError(f"GitHub could not be reached or answered oddly: {type(exc).__name__}") from exc
    except FilingError:
        FailureGroup.objects.filter(pk=group.pk, issue_claimed_at=now).update(issue_claimed_at=None)
        raise
    FailureGroup.objects.filter(pk=group.pk).update(issue_url=issue_url, issue_number=number)
    group.issue_url, group.issue_number = issue_url, number
    return issue_url
