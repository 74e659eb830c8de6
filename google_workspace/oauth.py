"""OAuth 2.0 against Google: the consent URL with incremental scopes, the code exchange, and a
valid access token for an account, refreshed through Google's own `google-auth`. Tokens stay on
the server only.

Scopes are incremental (`include_granted_scopes=true`): reading mail for memory is asked for
first; sending, drafting and modifying mail only when the user turns on "let the assistant act
in Gmail"; calendar events only when they turn on calendar actions.

A refresh that Google refuses (revoked access, `invalid_grant`) marks the account
disconnected (NotConnected): a status the user fixes by connecting again, not an error retried
forever.
"""

from __future__ import annotations

import functools
import secrets
import ssl
from datetime import UTC, timedelta
from urllib.parse import urlencode

import httpx
import requests
from django.conf import settings
from django.utils import timezone
from google.auth import exceptions as google_exceptions
from google.auth.transport.requests import Request as GoogleRequest
from google.oauth2.credentials import Credentials

from .errors import GoogleError, NotConnected
from .models import GmailAccount

READ_SCOPES = ("https://www.googleapis.com/auth/gmail.readonly", "openid", "email")
# "Let the assistant act in Gmail": send, drafts, and labels/trash (archive, delete to trash).
GMAIL_ACT_SCOPES = (
    "https://www.googleapis.com/auth/gmail.send",
    "https://www.googleapis.com/auth/gmail.compose",
    "https://www.googleapis.com/auth/gmail.modify",
)
CALENDAR_SCOPES = ("https://www.googleapis.com/auth/calendar.events",)
PURPOSES = {"read": READ_SCOPES, "gmail_actions": GMAIL_ACT_SCOPES, "calendar_actions": CALENDAR_SCOPES}
SCOPE = " ".join(READ_SCOPES)
STATE_MAX_AGE = timedelta(minutes=15)


def configured() -> bool:
    return bool(settings.GMAIL_CLIENT_ID and settings.GMAIL_CLIENT_SECRET)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The CA bundle, loaded once per process: loading it takes about 75 ms, which every Gmail
    client (one per drafted email, per sent email, per hydration run) paid again."""
    return httpx.create_ssl_context()


def new_http() -> httpx.Client:
    return httpx.Client(timeout=settings.HYDRATION_HTTP_TIMEOUT, verify=_tls())


def new_state() -> str:
    return secrets.token_urlsafe(32)


def scopes_for(purpose: str) -> tuple[str, ...]:
    """What to ask Google for: reading always, plus what this purpose adds. Google adds the
    scopes granted earlier (include_granted_scopes), so turning on calendar keeps Gmail's."""
    if purpose not in PURPOSES:
        raise GoogleError(f"Unknown Google permission {purpose!r}.")
    return tuple(dict.fromkeys(READ_SCOPES + PURPOSES[purpose]))


def has_scopes(account: GmailAccount, scopes) -> bool:
    return set(scopes) <= set((account.scopes or "").split())


def authorize_url(*, state: str, redirect_uri: str, scopes: tuple[str, ...] = READ_SCOPES) -> str:
    """Google's consent page for `state` (a GmailOAuthState the caller stored)."""
    query = urlencode({
        "client_id": settings.GMAIL_CLIENT_ID, "redirect_uri": redirect_uri, "response_type": "code",
        "scope": " ".join(scopes), "access_type": "offline", "prompt": "consent",
        "include_granted_scopes": "true", "state": state,
    })
    return f"{settings.GOOGLE_OAUTH_AUTHORIZE_URL}?{query}"


def _token_request(data: dict) -> dict:
    payload = {"client_id": settings.GMAIL_CLIENT_ID, "client_secret": settings.GMAIL_CLIENT_SECRET, **data}
    with new_http() as http:
        response = http.post(settings.GOOGLE_OAUTH_TOKEN_URL, data=payload)
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.status_code >= 400:
        error = body.get("error", f"HTTP {response.status_code}")
        if error in ("invalid_grant", "unauthorized_client", "invalid_client"):
            raise NotConnected(f"Google refused the Gmail authorization ({error}).")
        raise GoogleError(f"Google's token endpoint answered {response.status_code}: {error}")
    return body


def exchange_code(*, code: str, redirect_uri: str) -> dict:
    """The tokens Google gives for an authorization code (no write)."""
    return _token_request({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri})


def mark_disconnected(account: GmailAccount, detail: str) -> None:
    """The grant is gone: the user must connect again (a status, not an error to retry)."""
    account.status = GmailAccount.Status.DISCONNECTED
    account.status_detail = detail[:500]
    account.access_token = ""
    account.save(update_fields=["status", "status_detail", "access_token", "updated_at"])


class _Request(GoogleRequest):
    """google-auth's requests transport with the product's HTTP timeout (its default is 120 s)."""

    def __call__(self, url, method="GET", body=None, headers=None, timeout=None, **kwargs):
        return super().__call__(url, method=method, body=body, headers=headers,
                                timeout=timeout or settings.HYDRATION_HTTP_TIMEOUT, **kwargs)


def credentials(account: GmailAccount) -> Credentials:
    """The account's tokens as google-auth credentials (expiry is naive UTC in google-auth)."""
    expiry = account.token_expires_at.astimezone(UTC).replace(tzinfo=None) if account.token_expires_at else None
    return Credentials(
        token=account.access_token or None, refresh_token=account.refresh_token or None,
        token_uri=settings.GOOGLE_OAUTH_TOKEN_URL, client_id=settings.GMAIL_CLIENT_ID,
        client_secret=settings.GMAIL_CLIENT_SECRET, expiry=expiry,
    )


def access_token(account: GmailAccount, *, force_refresh: bool = False) -> str:
    """A valid access token for the account, refreshed by google-auth when it is about to expire
    (or when Google just refused it). A grant Google refuses marks the account disconnected."""
    creds = credentials(account)
    if creds.valid and not force_refresh:
        return account.access_token
    if not account.refresh_token:
        mark_disconnected(account, "No refresh token: reconnect Gmail.")
        raise NotConnected(account.status_detail)
    try:
        creds.refresh(_Request())
    except google_exceptions.RefreshError as exc:
        if getattr(exc, "retryable", False):
            raise GoogleError(f"Google's token endpoint is unavailable: {exc}") from None
        mark_disconnected(account, f"Google refused the authorization ({exc}): reconnect Gmail.")
        raise NotConnected(account.status_detail) from None
    except (google_exceptions.TransportError, requests.RequestException) as exc:
        raise GoogleError(f"Google's token endpoint could not be reached: {exc}") from None
    account.access_token = creds.token or ""
    expiry = creds.expiry.replace(tzinfo=UTC) if creds.expiry else timezone.now() + timedelta(hours=1)
    account.token_expires_at = expiry
    account.save(update_fields=["access_token", "token_expires_at", "updated_at"])
    return account.access_token


