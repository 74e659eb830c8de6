"""The one client for the Gmail API's reads with the user's own grant: the access token from
oauth (refreshed once more on a 401; a second 401 marks the account disconnected), one HTTP
client per use, and `pages` for the list calls' paging. Errors are GoogleError, or NotConnected
when the user must connect again."""

from __future__ import annotations

from django.conf import settings

from .errors import GoogleError, NotConnected
from .models import GmailAccount
from .oauth import access_token, mark_disconnected, new_http


def _api(path: str) -> str:
    return f"{settings.GMAIL_API_BASE_URL.rstrip('/')}/gmail/v1/users/me/{path.lstrip('/')}"


def profile_email(token: str) -> str:
    with new_http() as http:
        response = http.get(_api("profile"), headers={"Authorization": f"Bearer {token}"})
    if response.status_code != 200:
        raise GoogleError(f"Gmail profile lookup answered {response.status_code}.")
    return response.json().get("emailAddress", "")


class GoogleClient:
    """Authenticated GETs to the Gmail API; refreshes once on a 401."""

    def __init__(self, account: GmailAccount):
        self.account = account
        self.http = new_http()

    def close(self):
        self.http.close()

    def get(self, path: str, params: dict | None = None) -> dict:
        for attempt in (0, 1):
            token = access_token(self.account, force_refresh=attempt == 1)
            response = self.http.get(_api(path), params=params, headers={"Authorization": f"Bearer {token}"})
            if response.status_code == 401 and attempt == 0:
                continue
            if response.status_code == 401:
                mark_disconnected(self.account, "Gmail refused the refreshed token: reconnect Gmail.")
                raise NotConnected(self.account.status_detail)
            if response.status_code != 200:
                raise GoogleError(f"Gmail {path.split('?')[0]} answered {response.status_code}: {response.text[:200]}")
            return response.json()
        raise GoogleError("unreachable")

    def pages(self, path: str, params: dict, *, limit: int, key: str = "messages") -> list[dict]:
        """A list call's entries (`key`) page after page, until `limit` is reached (the last page
        read is kept whole: callers take what they need) or Google has no next page."""
        entries: list[dict] = []
        token = None
        while len(entries) < limit:
            listing = self.get(path, {**params, "pageToken": token} if token else params)
            entries += listing.get(key) or []
            token = listing.get("nextPageToken")
            if not token:
                break
        return entries


