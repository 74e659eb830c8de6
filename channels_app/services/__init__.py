"""Every write of the channels app. `user_message_send` is the seam the agent loop calls
(settings.LINDY_USER_MESSAGE_SENDER)."""

from .alerts import ratio_alerts_check
from .inbound import (
    attachment_store,
    bundle_dispatch,
    debounce_fire,
    debounce_recover,
    inbound_store,
    linq_event_process,
    twilio_inbound_process,
)
from .outbound import typing_start, typing_stop, user_message_send
from .pool import cap_reserve, healthiest_number, phone_normalize, profile_register, stat_add
from .slack import (
    slack_channel_joined,
    slack_channel_left,
    slack_member_joined,
    slack_member_left,
    slack_private_memory_set,
    slack_team_memory_set,
)

__all__ = [
    "attachment_store", "bundle_dispatch", "cap_reserve", "debounce_fire", "debounce_recover", "healthiest_number",
    "inbound_store", "linq_event_process", "phone_normalize", "profile_register", "ratio_alerts_check",
    "slack_channel_joined", "slack_channel_left", "slack_member_joined", "slack_member_left",
    "slack_private_memory_set", "slack_team_memory_set", "stat_add", "twilio_inbound_process", "typing_start",
    "typing_stop", "user_message_send",
]
