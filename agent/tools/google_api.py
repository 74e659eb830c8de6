"""One live action's calls to a Google API (Gmail, Calendar) with the user's own grant.

HTTP is httpx, as in the rest of the product (timeouts, the test fakes); credentials and their
refresh are google-auth's (google_workspace.oauth.access_token), so no token protocol is hand-written.

- 401: refresh once (google-auth); a second 401, or a refresh Google refuses, marks the
  connection disconnected and fails the action with "reconnect Gmail" — never a retry loop.
- 429 (and Gmail's 403 rate-limit reasons): wait Retry-After, or back off exponentially.
- 5xx or a timeout after the request left: retried only when replaying the request is
  harmless (`replay_safe`); otherwise Ambiguous, and execution.drive asks before redoing it.
- Every wait comes out of one budget (LINDY_ACTION_RETRY_BUDGET_SECONDS, LINDY_ACTION_MAX_TRIES);
  when it is spent, Unavailable.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime

import httpx
from django.conf import settings
from django.utils import timezone

from google_workspace import oauth as google_auth
from google_workspace.errors import GoogleError, NotConnected
from google_workspace.models import GmailAccount

from .execution import Ambiguous, Disconnected, Rejected, Unavailable, drive, run_once

RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 8.0


def reconnect_text(product: str) -> str:
    return (f"{product} access was revoked or expired: reconnect Gmail (Memory → your memory → Gmail) "
            "and ask again. Nothing was sent.")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, (parsedate_to_datetime(value) - timezone.now()).total_seconds())
        except (TypeError, ValueError):
            return None


def error_of(response: httpx.Response) -> tuple[str, set[str]]:
    """Google's error message and reasons ({"error": {"message", "errors": [{"reason"}]}})."""
    try:
        error = response.json().get("error")
    except ValueError:
        return response.text[:200], set()
    if isinstance(error, dict):
        reasons = {e.get("reason", "") for e in error.get("errors") or [] if isinstance(e, dict)}
        return str(error.get("message") or error.get("status") or ""), reasons
    return str(error or ""), set()


class Session:
    def __init__(self, account: GmailAccount, product: str):
        self.account = account
        self.product = product
        self.http = httpx.Client(timeout=settings.LINDY_ACTION_HTTP_TIMEOUT)
        self.deadline = time.monotonic() + settings.LINDY_ACTION_RETRY_BUDGET_SECONDS
        self.tries = 0

    def close(self) -> None:
        self.http.close()

    def wait(self, reason: str, seconds: float | None = None) -> None:
        """Back off before the next try: Retry-After when the provider said, else exponential
        with jitter; raise Unavailable when the budget cannot cover it."""
        self.tries += 1
        if seconds is None:
            seconds = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (self.tries - 1)) * random.uniform(0.5, 1)
        if self.tries >= settings.LINDY_ACTION_MAX_TRIES or time.monotonic() + seconds > self.deadline:
            raise Unavailable(f"{self.product} is unavailable ({reason}); gave up after {self.tries} tries")
        time.sleep(seconds)

    def _token(self, *, refresh: bool) -> str:
        if self.account.status != GmailAccount.Status.CONNECTED:
            raise Disconnected(reconnect_text(self.product))
        while True:
            try:
                return google_auth.access_token(self.account, force_refresh=refresh)
            except NotConnected:
                raise Disconnected(reconnect_text(self.product)) from None
            except GoogleError as exc:
                self.wait(str(exc))

    def request(self, method: str, url: str, *, replay_safe: bool, json=None, params=None,
                content: bytes | None = None, content_type: str = "") -> httpx.Response:
        """The provider's answer once it is not a retryable one: 2xx, or a 4xx for `check`.
        `content` (with its `content_type`) is a media upload's body, sent as is."""
        refreshed = False
        while True:
            headers = {"Authorization": f"Bearer {self._token(refresh=refreshed)}"}
            if content_type:
                headers["Content-Type"] = content_type
            try:
                response = self.http.request(method, url, json=json, params=params, content=content, headers=headers)
            except httpx.TransportError as exc:
                left = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if left and not replay_safe:
                    raise Ambiguous(f"{self.product} did not answer ({type(exc).__name__})") from None
                self.wait(type(exc).__name__)
                continue
            status = response.status_code
            if status == 401:
                if refreshed:
                    google_auth.mark_disconnected(self.account, f"{self.product} refused the refreshed token: "
                                                  "reconnect Gmail.")
                    raise Disconnected(reconnect_text(self.product))
                refreshed = True
                continue
            if status == 429 or (status == 403 and error_of(response)[1] & RATE_LIMIT_REASONS):
                self.wait(f"HTTP {status}", _retry_after(response))
                continue
            if status >= 500:
                if not replay_safe:
                    raise Ambiguous(f"{self.product} answered {status}")
                self.wait(f"HTTP {status}", _retry_after(response))
                continue
            return response

    def check(self, response: httpx.Response, what: str) -> dict:
        """The JSON of a 2xx answer; a 4xx is the provider's final no, with its reason."""
        if response.status_code < 300:
            return response.json() if response.content else {}
        message, reasons = error_of(response)
        if response.status_code == 403 and reasons & {"insufficientPermissions", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"}:
            raise Rejected(f"Google did not grant the assistant this permission ({what}): turn the "
                           "assistant's actions on again on your memory page.")
        if response.status_code == 404:
            raise Rejected(f"{self.product} has no such item ({what}): {message or 'not found'}")
        raise Rejected(f"{self.product} refused {what} ({response.status_code}): {message or 'no reason given'}")


def run_action(actions: dict, product: str, ctx, tool: str, arguments: dict, result_cls):
    """Run `tool` once for the task's user with their Google grant (`actions`: tool → action class)."""
    account = GmailAccount.objects.filter(user=ctx.user).first()
    if account is None:
        raise Disconnected(reconnect_text(product))
    action = actions[tool](account, arguments)
    try:
        return run_once(ctx, tool, arguments, action, result_cls)
    finally:
        action.session.close()


def resume_action(actions: dict, product: str, entry, result_cls, *, last_chance: bool = False):
    """Drive a pending entry again (its key is stored): asks Google before redoing anything."""
    account = GmailAccount.objects.filter(user_id=entry.user_id).first()
    if account is None:
        raise Disconnected(reconnect_text(product))
    action = actions[entry.tool](account, entry.arguments)
    try:
        return drive(entry, action, result_cls, fresh=False, last_chance=last_chance)
    finally:
        action.session.close()
