"""Hooks between apps that must not import each other, filled by the app that owns the data in
its AppConfig.ready (never dotted paths in settings, which the environment could point anywhere
and lint-imports cannot see).

- `agent_run_finished`: the agent sent it when a run of it stops (task_id, call_ids, stopped);
  the analyst, below the agent but never imported by it, scores the run.
- Slack channels for memory: channels_app owns the installations; hydration's Slack source asks
  here for the channels switched on for a team's or a user's memory, as plain values, so it
  depends on neither channels' models nor their shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
