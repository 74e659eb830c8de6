"""Slack channels the assistant was explicitly added to, and who may use them for memory."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lindy import audit
from lindy.models import User

from ..models import SlackChannel, SlackChannelShare, SlackInstallation

logger = logging.getLogger(__name__)


def _installation(slack_team_id: str, enterprise_id: str | None = None) -> SlackInstallation | None:
    return (
        SlackInstallation.objects.filter(slack_team_id=slack_team_id)
        .exclude(bot_token="")
        .order_by("-installed_at", "-pk")
        .first()
    )


def _lindy_user_for(client: WebClient, slack_user_id: str, team_id: int) -> User | None:
    """Slack people map to Lindy people by their verified email, within the installing team."""
    try:
        profile = client.users_info(user=slack_user_id)["user"]
    except SlackApiError as exc:
        logger.warning("users.info failed for %s: %s", slack_user_id, exc)
        return None
    if profile.get("is_bot") or profile.get("deleted"):
        return None
    email = (profile.get("profile") or {}).get("email") or ""
    if not email:
        return None
    return User.objects.filter(
        email__iexact=email, memberships__team_id=team_id, is_active=True
    ).first()


def _member_ids(client: WebClient, channel_id: str) -> list[str]:
    members: list[str] = []
    cursor = None
    while True:
        page = client.conversations_members(channel=channel_id, cursor=cursor, limit=200)
        members.extend(page.get("members") or [])
        cursor = (page.get("response_metadata") or {}).get("next_cursor")
        if not cursor:
            return members


def slack_channel_joined(*, client: WebClient, slack_team_id: str, channel_id: str, inviter: str = "") -> SlackChannel | None:
    """The bot was added to a channel: register it, public or private as Slack says (never the id)."""
    installation = _installation(slack_team_id)
    if installation is None or installation.team_id is None:
        logger.warning("Bot joined %s in %s, which no Lindy team installed", channel_id, slack_team_id)
        return None
    info = client.conversations_info(channel=channel_id)["channel"]
    is_private = bool(info.get("is_private") or info.get("is_group"))
    with transaction.atomic():
        channel, _ = SlackChannel.objects.update_or_create(
            slack_team_id=slack_team_id, channel_id=channel_id,
            defaults={
                "team_id": installation.team_id, "installation": installation, "name": info.get("name", ""),
                "is_private": is_private, "active": True, "left_at": None, "inviter_slack_id": inviter or "",
                "joined_at": timezone.now(),
            },
            # A public channel the assistant was added to feeds team memory from the start; a team
            # admin's switch (off) is kept when the assistant is added again.
            create_defaults={
                "team_id": installation.team_id, "installation": installation, "name": info.get("name", ""),
                "is_private": is_private, "active": True, "inviter_slack_id": inviter or "",
                "joined_at": timezone.now(), "use_for_team_memory": not is_private,
            },
        )
        if is_private:
            # A channel that turned private must not keep feeding team memory.
            if channel.use_for_team_memory:
                SlackChannel.objects.filter(pk=channel.pk).update(use_for_team_memory=False)
                channel.use_for_team_memory = False
    if is_private:
        _sync_shares(client, channel, installation)
    return channel


def _sync_shares(client: WebClient, channel: SlackChannel, installation: SlackInstallation) -> None:
    try:
        member_ids = _member_ids(client, channel.channel_id)
    except SlackApiError as exc:
        logger.warning("conversations.members failed for %s: %s", channel.channel_id, exc)
        return
    present = set()
    for slack_user_id in member_ids:
        if slack_user_id == installation.bot_user_id:
            continue
        user = _lindy_user_for(client, slack_user_id, channel.team_id)
        if user is None:
            continue
        present.add(user.pk)
        SlackChannelShare.objects.get_or_create(channel=channel, user=user, defaults={"slack_user_id": slack_user_id})
    SlackChannelShare.objects.filter(channel=channel).exclude(user_id__in=present).delete()


def slack_channel_left(*, slack_team_id: str, channel_id: str) -> bool:
    """The bot left or was removed: the channel is no longer read, for any memory."""
    return bool(
        SlackChannel.objects.filter(slack_team_id=slack_team_id, channel_id=channel_id, active=True)
        .update(active=False, left_at=timezone.now())
    )


def slack_member_joined(*, client: WebClient, slack_team_id: str, channel_id: str, slack_user_id: str) -> None:
    channel = SlackChannel.objects.filter(
        slack_team_id=slack_team_id, channel_id=channel_id, active=True, is_private=True
    ).first()
    if channel is None:
        return
    user = _lindy_user_for(client, slack_user_id, channel.team_id)
    if user is not None:
        SlackChannelShare.objects.get_or_create(channel=channel, user=user, defaults={"slack_user_id": slack_user_id})


def slack_member_left(*, slack_team_id: str, channel_id: str, slack_user_id: str) -> None:
    SlackChannelShare.objects.filter(
        channel__slack_team_id=slack_team_id, channel__channel_id=channel_id, slack_user_id=slack_user_id
    ).delete()


def slack_team_memory_set(*, channel: SlackChannel, enabled: bool, actor=None) -> SlackChannel:
    """Team admins only (the caller checks): public channels may feed team memory. Audited."""
    if channel.is_private and enabled:
        raise ValueError("Private channels never feed team memory; members switch them on for their own.")
    before = channel.use_for_team_memory
    with transaction.atomic():
        channel.use_for_team_memory = enabled
        channel.save(update_fields=["use_for_team_memory"])
        if before != enabled:
            audit.record(actor=actor, action="slack_channel.team_memory_set", obj=channel, label=f"#{channel.name}",
                         team=channel.team_id, before={"use_for_team_memory": before},
                         after={"use_for_team_memory": enabled})
    return channel


def slack_private_memory_set(*, share: SlackChannelShare, enabled: bool, actor=None) -> SlackChannelShare:
    """A member's own memory from a private channel. Audited, for superusers only: the channel is
    private, so its name is no team admin's to read."""
    before = share.use_for_memory
    with transaction.atomic():
        share.use_for_memory = enabled
        share.save(update_fields=["use_for_memory"])
        if before != enabled:
            audit.record(actor=actor, action="slack_channel_share.memory_set", obj=share,
                         before={"use_for_memory": before}, after={"use_for_memory": enabled})
    return share




def slack_workspace_uninstalled(*, client_id: str, enterprise_id: str | None, slack_team_id: str) -> int:
    """The app was removed (or its bot token revoked): forget the tokens, stop reading every channel."""
    installations = SlackInstallation.objects.filter(
        client_id=client_id, enterprise_id=enterprise_id or "", slack_team_id=slack_team_id
    )
    with transaction.atomic():
        for row in installations:
            audit.record(actor=None, action="slack_installation.disconnected", obj=row, team=row.team_id,
                         before={"connected": True}, after={"connected": False})
        installations.update(bot_token="", bot_refresh_token="", user_token="")
        return SlackChannel.objects.filter(slack_team_id=slack_team_id, active=True).update(
            active=False, left_at=timezone.now()
        )
