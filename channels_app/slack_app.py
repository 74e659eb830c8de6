"""The slack-bolt app, mounted in Django. Built from settings on first use (and rebuilt when
they change, as tests do), so an unset secret means the endpoint is simply closed.

Two of them share the listeners: the one behind the HTTP endpoints (OAuth install and redirect,
interactive payloads), and the one the Celery task replays a stored event through
(`dispatch_stored`): the endpoint verified its signature when it arrived, and by the time a busy
queue gets to it its timestamp may be older than the verifier's five minutes."""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from slack_bolt import App, BoltRequest
from slack_bolt.adapter.django import SlackRequestHandler
from slack_bolt.oauth.oauth_settings import OAuthSettings

from lindy.slack_client import web_client

from .services import slack as slack_services
from .slack_stores import DjangoInstallationStore, DjangoOAuthStateStore

logger = logging.getLogger(__name__)

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"

_lock = threading.Lock()
_cache: dict[tuple, SlackRequestHandler] = {}


def configured() -> bool:
    return bool(settings.SLACK_SIGNING_SECRET and settings.SLACK_CLIENT_ID and settings.SLACK_CLIENT_SECRET)


def _config_key() -> tuple:
    return (
        settings.SLACK_SIGNING_SECRET, settings.SLACK_CLIENT_ID, settings.SLACK_CLIENT_SECRET,
        settings.SLACK_API_BASE_URL, settings.SLACK_HTTP_TIMEOUT, settings.SLACK_AUTHORIZE_URL,
        tuple(settings.SLACK_BOT_SCOPES),
    )


# The events the listeners below act on: the endpoint stores these and answers every other one
# (a channel message: the hydration source reads those from the history) without keeping it.
HANDLED_EVENTS = frozenset({
    "member_joined_channel", "member_left_channel", "channel_left", "group_left", "app_uninstalled", "tokens_revoked",
})

_replay_cache: dict[tuple, App] = {}


class EventFailed(Exception):
    """A listener failed on a stored event (slack-bolt answered 5xx): the task retries it."""


def handler() -> SlackRequestHandler:
    key = _config_key()
    with _lock:
        if key not in _cache:
            _cache.clear()
            _cache[key] = SlackRequestHandler(_build_app())
        return _cache[key]


def _replay_app() -> App:
    key = _config_key()
    with _lock:
        if key not in _replay_cache:
            _replay_cache.clear()
            _replay_cache[key] = _build_app(verify=False)
        return _replay_cache[key]


def dispatch_stored(body: str) -> int:
    """Run the listeners on a stored, already verified event body. Returns slack-bolt's status
    (404: no listener for it, nothing to do). Raises EventFailed when a listener failed."""
    response = _replay_app().dispatch(BoltRequest(body=body, headers={"content-type": ["application/json"]}))
    if response.status >= 500:
        raise EventFailed(f"slack-bolt answered {response.status}: {response.body[:300]}")
    return response.status


def _build_app(verify: bool = True) -> App:
    oauth_settings = OAuthSettings(
        client_id=settings.SLACK_CLIENT_ID,
        client_secret=settings.SLACK_CLIENT_SECRET,
        scopes=list(settings.SLACK_BOT_SCOPES),
        installation_store=DjangoInstallationStore(client_id=settings.SLACK_CLIENT_ID),
        state_store=DjangoOAuthStateStore(expiration_seconds=600),
        install_path=INSTALL_PATH,
        redirect_uri_path=REDIRECT_PATH,
        install_page_rendering_enabled=False,
        authorization_url=settings.SLACK_AUTHORIZE_URL,
    )
    app = App(
        signing_secret=settings.SLACK_SIGNING_SECRET,
        oauth_settings=oauth_settings,
        client=web_client(),
        # Listeners run to the end before dispatch returns: in the replaying task, done means done.
        process_before_response=True,
        request_verification_enabled=verify,
        logger=logger,
    )
    _register_listeners(app)
    return app


def _register_listeners(app: App) -> None:
    @app.event("member_joined_channel")
    def on_member_joined(event, context, client, ack):
        ack()
        team = event.get("team") or context.team_id
        if event.get("user") == context.bot_user_id:
            slack_services.slack_channel_joined(
                client=client, slack_team_id=team, channel_id=event["channel"], inviter=event.get("inviter", "")
            )
        else:
            slack_services.slack_member_joined(
                client=client, slack_team_id=team, channel_id=event["channel"], slack_user_id=event.get("user", "")
            )

    @app.event("member_left_channel")
    def on_member_left(event, context, ack):
        ack()
        team = event.get("team") or context.team_id
        if event.get("user") == context.bot_user_id:
            slack_services.slack_channel_left(slack_team_id=team, channel_id=event["channel"])
        else:
            slack_services.slack_member_left(slack_team_id=team, channel_id=event["channel"], slack_user_id=event.get("user", ""))

    @app.event("channel_left")
    def on_channel_left(event, context, ack):
        ack()
        slack_services.slack_channel_left(slack_team_id=context.team_id, channel_id=event["channel"])

    @app.event("group_left")
    def on_group_left(event, context, ack):
        ack()
        slack_services.slack_channel_left(slack_team_id=context.team_id, channel_id=event["channel"])

    @app.event("app_uninstalled")
    def on_uninstalled(event, context, ack):
        ack()
        slack_services.slack_workspace_uninstalled(
            client_id=settings.SLACK_CLIENT_ID, enterprise_id=context.enterprise_id, slack_team_id=context.team_id
        )

    @app.event("tokens_revoked")
    def on_tokens_revoked(event, context, ack):
        ack()
        if (event.get("tokens") or {}).get("bot"):
            slack_services.slack_workspace_uninstalled(
                client_id=settings.SLACK_CLIENT_ID, enterprise_id=context.enterprise_id, slack_team_id=context.team_id
            )

    @app.event("message")
    def on_message(ack):
        # Messages are read by the Slack hydration source; acknowledging keeps Slack from retrying.
        ack()
