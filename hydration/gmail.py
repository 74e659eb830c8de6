"""The Gmail client: OAuth 2.0 against Google (authorize URL, code exchange, refresh), with
tokens kept on the server only, and the Gmail API reached over plain HTTP.

Connecting and disconnecting (the OAuth state rows, storing the tokens a code was exchanged
for) are writes of hydration.services (gmail_connect_start, gmail_account_connect,
gmail_account_disconnect); this module speaks the protocol. A refreshed access token is
saved on the account by the client that refreshed it, during a run's fetch.

A refresh that Google refuses (revoked access, `invalid_grant`) marks the account
disconnected: a status the user fixes by connecting again, not an error retried forever.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from urllib.parse import urlencode

import httpx
from django.conf import settings
from django.utils import timezone

from .models import GmailAccount

SCOPE = "https://www.googleapis.com/auth/gmail.readonly openid email"
STATE_MAX_AGE = timedelta(minutes=15)


class GmailError(Exception):
    pass


class GmailDisconnected(GmailError):
    """The account needs the user to connect again."""


def configured() -> bool:
    return bool(settings.GMAIL_CLIENT_ID and settings.GMAIL_CLIENT_SECRET)


def _http() -> httpx.Client:
    return httpx.Client(timeout=settings.HYDRATION_HTTP_TIMEOUT)


def new_state() -> str:
    return secrets.token_urlsafe(32)


def authorize_url(*, state: str, redirect_uri: str) -> str:
    """Google's consent page for `state` (a GmailOAuthState the caller stored)."""
    query = urlencode({
        "client_id": settings.GMAIL_CLIENT_ID, "redirect_uri": redirect_uri, "response_type": "code",
        "scope": SCOPE, "access_type": "offline", "prompt": "consent", "include_granted_scopes": "true",
        "state": state,
    })
    return f"{settings.GOOGLE_OAUTH_AUTHORIZE_URL}?{query}"


def _token_request(data: dict) -> dict:
    payload = {"client_id": settings.GMAIL_CLIENT_ID, "client_secret": settings.GMAIL_CLIENT_SECRET, **data}
    with _http() as http:
        response = http.post(settings.GOOGLE_OAUTH_TOKEN_URL, data=payload)
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.status_code >= 400:
        error = body.get("error", f"HTTP {response.status_code}")
        if error in ("invalid_grant", "unauthorized_client", "invalid_client"):
            raise GmailDisconnected(f"Google refused the Gmail authorization ({error}).")
        raise GmailError(f"Google's token endpoint answered {response.status_code}: {error}")
    return body


def exchange_code(*, code: str, redirect_uri: str) -> dict:
    """The tokens Google gives for an authorization code (no write)."""
    return _token_request({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri})


def _mark_disconnected(account: GmailAccount, detail: str) -> None:
    account.status = GmailAccount.Status.DISCONNECTED
    account.status_detail = detail[:500]
    account.access_token = ""
    account.save(update_fields=["status", "status_detail", "access_token", "updated_at"])


def access_token(account: GmailAccount, *, force_refresh: bool = False) -> str:
    fresh = account.token_expires_at and account.token_expires_at > timezone.now() + timedelta(seconds=60)
    if account.access_token and fresh and not force_refresh:
        return account.access_token
    if not account.refresh_token:
        _mark_disconnected(account, "No refresh token: connect Gmail again.")
        raise GmailDisconnected(account.status_detail)
    try:
        tokens = _token_request({"grant_type": "refresh_token", "refresh_token": account.refresh_token})
    except GmailDisconnected as exc:
        _mark_disconnected(account, str(exc))
        raise
    account.access_token = tokens["access_token"]
    account.token_expires_at = timezone.now() + timedelta(seconds=int(tokens.get("expires_in", 3600)))
    account.save(update_fields=["access_token", "token_expires_at", "updated_at"])
    return account.access_token


def _api(path: str) -> str:
    return f"{settings.GMAIL_API_BASE_URL.rstrip('/')}/gmail/v1/users/me/{path.lstrip('/')}"


def profile_email(token: str) -> str:
    with _http() as http:
        response = http.get(_api("profile"), headers={"Authorization": f"Bearer {token}"})
    if response.status_code != 200:
        raise GmailError(f"Gmail profile lookup answered {response.status_code}.")
    return response.json().get("emailAddress", "")


class GmailClient:
    """Authenticated GETs to the Gmail API; refreshes once on a 401."""

    def __init__(self, account: GmailAccount):
        self.account = account
        self.http = _http()

    def close(self):
        self.http.close()

    def get(self, path: str, params: dict | None = None) -> dict:
        for attempt in (0, 1):
            token = access_token(self.account, force_refresh=attempt == 1)
            response = self.http.get(_api(path), params=params, headers={"Authorization": f"Bearer {token}"})
            if response.status_code == 401 and attempt == 0:
                continue
            if response.status_code == 401:
                _mark_disconnected(self.account, "Gmail refused the refreshed token: connect Gmail again.")
                raise GmailDisconnected(self.account.status_detail)
            if response.status_code != 200:
                raise GmailError(f"Gmail {path.split('?')[0]} answered {response.status_code}: {response.text[:200]}")
            return response.json()
        raise GmailError("unreachable")
