"""Every write of the Google connection: the OAuth state rows, the tokens a code was exchanged
for, the "act in Gmail / Calendar" switches, and disconnecting."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from lindy import audit

from . import oauth
from .client import profile_email
from .errors import GoogleError
from .models import GmailAccount, GmailOAuthState


def gmail_connect_start(*, user, redirect_uri: str, purpose: str = "read") -> str:
    """Store a one-time OAuth state for `user` and return Google's consent URL for it, asking
    only for the scopes `purpose` needs (oauth.PURPOSES). Raises GoogleError for an
    unknown purpose (nothing stored)."""
    scopes = oauth.scopes_for(purpose)
    state = GmailOAuthState.objects.create(state=oauth.new_state(), user=user, purpose=purpose)
    return oauth.authorize_url(state=state.state, redirect_uri=redirect_uri, scopes=scopes)


def gmail_account_connect(*, user, state: str, code: str, redirect_uri: str) -> GmailAccount:
    """Consume the OAuth state, exchange the code, and store the tokens for `user`.
    Raises GoogleError (nothing stored) for a missing, forged, used or expired state."""
    if not state or not code:
        raise GoogleError("The Gmail authorization came back without a code.")
    with transaction.atomic():
        row = GmailOAuthState.objects.select_for_update().filter(state=state, user=user, consumed_at=None).first()
        if row is None or row.created_at < timezone.now() - oauth.STATE_MAX_AGE:
            raise GoogleError("This Gmail authorization link expired or was already used. Start again.")
        row.consumed_at = timezone.now()
        row.save(update_fields=["consumed_at"])
        purpose = row.purpose
    tokens = oauth.exchange_code(code=code, redirect_uri=redirect_uri)
    email = profile_email(tokens["access_token"])
    account, _ = GmailAccount.objects.get_or_create(user=user)
    account.email = email
    account.access_token = tokens["access_token"]
    account.refresh_token = tokens.get("refresh_token") or account.refresh_token
    account.token_expires_at = timezone.now() + timedelta(seconds=int(tokens.get("expires_in", 3600)))
    # With include_granted_scopes the answer lists every scope granted so far, not only the new ones.
    account.scopes = tokens.get("scope", "") or account.scopes
    # Acting is on only when the user asked for it now and Google granted it (the consent
    # screen lets a user untick a scope); a read-only reconnect leaves the switches as they were.
    # A switch stays on only while Google still grants its scopes (a revoked grant loses them).
    if purpose == "gmail_actions" or not oauth.has_scopes(account, oauth.GMAIL_ACT_SCOPES):
        account.act_in_gmail = oauth.has_scopes(account, oauth.GMAIL_ACT_SCOPES)
    if purpose == "calendar_actions" or not oauth.has_scopes(account, oauth.CALENDAR_SCOPES):
        account.act_in_calendar = oauth.has_scopes(account, oauth.CALENDAR_SCOPES)
    before = audit.snapshot(account, GOOGLE_AUDITED) if account.pk else None
    account.status = GmailAccount.Status.CONNECTED
    account.status_detail = ""
    with transaction.atomic():
        account.save()
        audit.record(actor=user, action="google_account.connected", obj=account, label=email, before=before,
                     after=audit.snapshot(account, GOOGLE_AUDITED))
    return account


def gmail_actions_turn_off(*, user, purpose: str) -> int:
    """The user no longer lets the assistant act in Gmail (or their calendar). The grant stays
    (reading for memory uses it); the assistant's actions go back to recorded-only."""
    field = {"gmail_actions": "act_in_gmail", "calendar_actions": "act_in_calendar"}.get(purpose)
    if field is None:
        raise GoogleError(f"Unknown Google permission {purpose!r}.")
    with transaction.atomic():
        _google_audit(user, "google_account.actions_off", {field: False})
        return GmailAccount.objects.filter(user=user).update(**{field: False})


def gmail_account_disconnect(*, user) -> int:
    """Delete the user's Gmail tokens; the account stays, marked disconnected."""
    with transaction.atomic():
        _google_audit(user, "google_account.disconnected", {"status": GmailAccount.Status.DISCONNECTED.value})
        return GmailAccount.objects.filter(user=user).update(
            access_token="", refresh_token="", token_expires_at=None, status=GmailAccount.Status.DISCONNECTED,
            status_detail="Disconnected by the user.",
        )


# What the audit log keeps of a Google connection: what the assistant may read and do, never tokens.
GOOGLE_AUDITED = ("email", "status", "scopes", "act_in_gmail", "act_in_calendar")


def _google_audit(user, action: str, change: dict) -> None:
    account = GmailAccount.objects.filter(user=user).first()
    if account is None:
        return
    before = audit.snapshot(account, GOOGLE_AUDITED)
    after = {**before, **change}
    if before != after:
        audit.record(actor=user, action=action, obj=account, label=account.email, before=before, after=after)
