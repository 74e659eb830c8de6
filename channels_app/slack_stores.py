"""slack_sdk's installation and OAuth state stores, backed by Django models.

The Lindy team an install belongs to travels through the OAuth `state`: the install view says
which team's admin started it (a context variable read by `issue`), the callback view says which
state came back (read by `save`).
"""

from __future__ import annotations

import logging
import secrets
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from slack_sdk.oauth.installation_store import InstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store import OAuthStateStore

from lindy import audit
from lindy.models import User

from .models import SlackInstallation, SlackOAuthState

logger = logging.getLogger(__name__)

_install_started_by: ContextVar[tuple[int | None, int | None]] = ContextVar("slack_install_started_by", default=(None, None))
_callback_state: ContextVar[str | None] = ContextVar("slack_callback_state", default=None)


@contextmanager
def install_started_by(*, team_id: int, user_id: int):
    token = _install_started_by.set((team_id, user_id))
    try:
        yield
    finally:
        _install_started_by.reset(token)


@contextmanager
def callback_state(state: str | None):
    token = _callback_state.set(state)
    try:
        yield
    finally:
        _callback_state.reset(token)


def _ts(value) -> datetime | None:
    if not value:
        return None
    return datetime.fromtimestamp(int(value), tz=UTC)


class DjangoOAuthStateStore(OAuthStateStore):
    def __init__(self, expiration_seconds: int = 600):
        self.expiration_seconds = expiration_seconds

    @property
    def logger(self):
        return logger

    def issue(self, *args, **kwargs) -> str:
        team_id, user_id = _install_started_by.get()
        state = secrets.token_urlsafe(24)
        SlackOAuthState.objects.create(
            state=state, team_id=team_id, started_by_id=user_id,
            expire_at=timezone.now() + timedelta(seconds=self.expiration_seconds),
        )
        return state

    def consume(self, state: str) -> bool:
        if not state:
            return False
        return bool(
            SlackOAuthState.objects.filter(state=state, consumed_at__isnull=True, expire_at__gt=timezone.now())
            .update(consumed_at=timezone.now())
        )


class DjangoInstallationStore(InstallationStore):
    def __init__(self, client_id: str):
        self.client_id = client_id

    @property
    def logger(self):
        return logger

    def save(self, installation: Installation):
        state = _callback_state.get()
        team_id, started_by = (
            SlackOAuthState.objects.filter(state=state).values_list("team_id", "started_by").first() if state else None
        ) or (None, None)
        previous = self._latest(installation.enterprise_id, installation.team_id)
        if team_id is None and previous is not None:
            team_id = previous.team_id
        row = SlackInstallation.objects.create(
            team_id=team_id,
            client_id=self.client_id,
            app_id=installation.app_id or "",
            enterprise_id=installation.enterprise_id or "",
            enterprise_name=installation.enterprise_name or "",
            slack_team_id=installation.team_id or "",
            slack_team_name=installation.team_name or "",
            bot_token=installation.bot_token or "",
            bot_refresh_token=installation.bot_refresh_token or "",
            bot_token_expires_at=_ts(installation.bot_token_expires_at),
            bot_id=installation.bot_id or "",
            bot_user_id=installation.bot_user_id or "",
            bot_scopes=",".join(installation.bot_scopes or []),
            user_id=installation.user_id or "",
            user_token=installation.user_token or "",
            user_scopes=",".join(installation.user_scopes or []),
            incoming_webhook_url=installation.incoming_webhook_url or "",
            incoming_webhook_channel=installation.incoming_webhook_channel or "",
            incoming_webhook_channel_id=installation.incoming_webhook_channel_id or "",
            incoming_webhook_configuration_url=installation.incoming_webhook_configuration_url or "",
            is_enterprise_install=bool(installation.is_enterprise_install),
            token_type=installation.token_type or "",
        )
        audit.record(actor=User.objects.filter(pk=started_by).first() if started_by else None,
                     action="slack_installation.connected", obj=row, team=team_id,
                     before=None, after={"workspace": row.slack_team_name or row.slack_team_id,
                                         "bot_scopes": row.bot_scopes})

    def _latest(self, enterprise_id, team_id, user_id=None) -> SlackInstallation | None:
        rows = SlackInstallation.objects.filter(
            client_id=self.client_id, enterprise_id=enterprise_id or "", slack_team_id=team_id or ""
        )
        if user_id:
            rows = rows.filter(user_id=user_id)
        return rows.order_by("-installed_at", "-pk").first()

    def find_bot(self, *, enterprise_id, team_id, is_enterprise_install=False) -> Bot | None:
        if is_enterprise_install:
            team_id = None
        row = self._latest(enterprise_id, team_id)
        if row is None or not row.bot_token:
            return None
        return Bot(
            app_id=row.app_id, enterprise_id=row.enterprise_id or None, team_id=row.slack_team_id or None,
            team_name=row.slack_team_name, bot_token=row.bot_token, bot_id=row.bot_id, bot_user_id=row.bot_user_id,
            bot_scopes=row.bot_scopes, bot_refresh_token=row.bot_refresh_token or None,
            bot_token_expires_at=int(row.bot_token_expires_at.timestamp()) if row.bot_token_expires_at else None,
            is_enterprise_install=row.is_enterprise_install, installed_at=row.installed_at.timestamp(),
        )

    def find_installation(self, *, enterprise_id, team_id, user_id=None, is_enterprise_install=False):
        if is_enterprise_install:
            team_id = None
        row = self._latest(enterprise_id, team_id, user_id)
        if row is None:
            return None
        return Installation(
            app_id=row.app_id, enterprise_id=row.enterprise_id or None, enterprise_name=row.enterprise_name,
            team_id=row.slack_team_id or None, team_name=row.slack_team_name, bot_token=row.bot_token or None,
            bot_id=row.bot_id, bot_user_id=row.bot_user_id, bot_scopes=row.bot_scopes,
            bot_refresh_token=row.bot_refresh_token or None,
            bot_token_expires_at=int(row.bot_token_expires_at.timestamp()) if row.bot_token_expires_at else None,
            user_id=row.user_id, user_token=row.user_token or None, user_scopes=row.user_scopes,
            incoming_webhook_url=row.incoming_webhook_url or None, is_enterprise_install=row.is_enterprise_install,
            token_type=row.token_type or None, installed_at=row.installed_at.timestamp(),
        )

    def delete_bot(self, *, enterprise_id, team_id) -> None:
        SlackInstallation.objects.filter(
            client_id=self.client_id, enterprise_id=enterprise_id or "", slack_team_id=team_id or ""
        ).update(bot_token="", bot_refresh_token="")

    def delete_installation(self, *, enterprise_id, team_id, user_id=None) -> None:
        rows = SlackInstallation.objects.filter(
            client_id=self.client_id, enterprise_id=enterprise_id or "", slack_team_id=team_id or ""
        )
        if user_id:
            rows = rows.filter(user_id=user_id)
        rows.delete()
