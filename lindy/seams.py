"""Hooks between apps that must not import each other, filled by the app that owns the data in
its AppConfig.ready (never dotted paths in settings, which the environment could point anywhere
and lint-imports cannot see).

- `agent_run_finished`: the agent sent it when a run of it stops (task_id, call_ids, stopped);
  the analyst, below the agent but never imported by it, scores the run.
- Slack channels for memory: channels_app owns the installations; hydration's Slack source asks
  here for the channels switched on for a team's or a user's memory, as plain values, so it
  depends on neither channels' models nor their shape.
- `inbound_handler`: channels_app hands a debounced bundle of a user's texts to it; the agent,
  above channels, registers `agent.services.handle_inbound`.
- `user_message_sender`: the agent's user-only tools (reply_to_user, send_sms_to_user) and its
  resend send through it; channels_app registers `channels_app.services.user_message_send`.

Tests swap an entry with `tests/seams.py` (`replaced`, or the `seams` fixture), restored after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.dispatch import Signal

agent_run_finished = Signal()


@dataclass(frozen=True)
class SlackMemoryChannel:
    """One Slack channel switched on for a memory, with what reading it takes."""

    channel_id: str
    name: str
    slack_team_id: str
    installation_id: int | None
    bot_token: str
    # Slack user id -> Lindy user id of the users who share the channel (private channels).
    members: dict[str, int] = field(default_factory=dict)


ChannelsFor = Callable[[object], list[SlackMemoryChannel]]
_slack_channels: dict[str, ChannelsFor] = {}


def register_slack_channels(*, for_team: ChannelsFor, for_user: ChannelsFor) -> None:
    """The one provider of memory's Slack channels (channels_app registers it)."""
    _slack_channels.update(team=for_team, user=for_user)


def slack_channels(kind: str, holder) -> list[SlackMemoryChannel]:
    """The channels switched on for a team's (`kind="team"`, holder a Team) or a user's memory
    (`kind="user"`, holder a User); none while no provider is registered."""
    provider = _slack_channels.get(kind)
    return list(provider(holder)) if provider else []


class NotRegistered(LookupError):
    """A hook no app registered (its app is not in INSTALLED_APPS, or its ready() did not run)."""


class InboundHandler(Protocol):
    """Records a debounced bundle of `user`'s messages and answers it; returns the task it fed."""

    def __call__(self, *, user: Any, channel: str, conversation_ref: str, messages: list[dict]) -> Any: ...


class UserMessageSender(Protocol):
    """Sends `body` to `user` in their one-to-one thread (`channel` None, "imessage" or "sms");
    returns what happened (`{"sent": False, "reason": ...}` when it was not sent)."""

    def __call__(self, *, user: Any, body: str, channel: str | None = None) -> Any: ...


_hooks: dict[str, Any] = {}


def register_inbound_handler(handler: InboundHandler) -> None:
    """The one taker of inbound bundles (the agent registers it)."""
    _hooks["inbound_handler"] = handler


def inbound_handler() -> InboundHandler:
    return _registered("inbound_handler")


def register_user_message_sender(sender: UserMessageSender) -> None:
    """The one sender of messages to a user themself (channels_app registers it)."""
    _hooks["user_message_sender"] = sender


def user_message_sender() -> UserMessageSender:
    return _registered("user_message_sender")


def _registered(name: str) -> Any:
    try:
        return _hooks[name]
    except KeyError:
        raise NotRegistered(f"no app registered lindy.seams {name}") from None
