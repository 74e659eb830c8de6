"""Every write of the channels app. `user_message_send` is the sender the agent calls
(registered in lindy.seams by apps.py).

Inbound texts: `webhooks` (claim, parse through `channels_app.providers`, act) → `store` (stored
first, debounce window started) → `debounce` (one bundle per pause) → `dispatch` (to the agent,
at most once, and recovery of what a dead worker left); a consent keyword (STOP, START...) is
handled by `consent` instead of the agent. Outbound: `outbound`, every send through the pre-send
`gate` (opt-out, ratio, cap); `alerts` raise, escalate and deliver ratio alerts to support.
Slack: `slack_events` stores Events API deliveries for the task that processes them, `slack` keeps
the channels. Tasks are queued by name (`queue`): no service imports channels_app.tasks."""

from .alerts import ratio_alert_acknowledge, ratio_alert_notify, ratio_alert_raise, ratio_alerts_check
from .consent import consent_confirm, consent_keyword_apply
from .debounce import DebounceOutcome, DebounceStatus, debounce_check, debounce_fire
from .dispatch import bundle_dispatch, bundle_give_up, debounce_recover
from .gate import opt_out_for
from .media import attachment_transcribe
from .outbound import typing_start, typing_stop, user_message_send
from .pool import cap_reserve, healthiest_number, number_day_record, phone_normalize, profile_register, stat_add
from .slack import (
    slack_channel_joined,
    slack_channel_left,
    slack_member_joined,
    slack_member_left,
    slack_private_memory_set,
    slack_team_memory_set,
)
from .slack_events import slack_event_process, slack_event_receive, slack_events_recover
from .store import attachment_store, inbound_store
from .webhooks import inbound_event_store, linq_event_process, twilio_inbound_process, webhook_event_claim

__all__ = [
    "DebounceOutcome", "DebounceStatus", "attachment_store", "attachment_transcribe", "bundle_dispatch", "bundle_give_up", "cap_reserve",
    "consent_confirm", "consent_keyword_apply", "opt_out_for", "ratio_alert_acknowledge", "ratio_alert_notify",
    "ratio_alert_raise", "slack_event_process", "slack_event_receive", "slack_events_recover",
    "debounce_check", "debounce_fire", "debounce_recover", "healthiest_number", "inbound_event_store",
    "inbound_store", "linq_event_process", "phone_normalize", "profile_register", "ratio_alerts_check",
    "slack_channel_joined", "slack_channel_left", "slack_member_joined", "slack_member_left",
    "slack_private_memory_set", "slack_team_memory_set", "stat_add", "number_day_record", "twilio_inbound_process", "typing_start",
    "typing_stop", "user_message_send", "webhook_event_claim",
]
