"""Channels: team admins switch public channels on for team memory, users their shared private
channels for their own; texting belongs to team members; channel health to support staff and
superusers only. Webhooks are for the providers: unsigned requests are refused whoever sends them."""

from django.utils import timezone

from channels_app.models import RatioAlert, SlackChannelShare
from tests.channels_app.factories import SendingNumberFactory, SlackChannelFactory, TextingProfileFactory
from tests.role_matrix import Case, api, everyone, page


def public_channel(cast) -> int:
    return SlackChannelFactory(team=cast.team, is_private=False).pk


def member_share(cast) -> int:
    channel = SlackChannelFactory(team=cast.team, is_private=True)
    return SlackChannelShare.objects.create(channel=channel, user=cast.member).pk


def member_texting(cast) -> str:
    TextingProfileFactory(user=cast.member, number=SendingNumberFactory())
    return "/channels/texting/lindy.vcf"


def line_alert(cast) -> int:
    return RatioAlert.objects.create(number=SendingNumberFactory(), day=timezone.localdate(), level="critical",
                                     ratio=12.0, sent=12, received=1, threshold=10.0).pk


WORKSPACE = page(200, support=404, superuser=404)
HEALTH = page(404, support=200, superuser=200)

CASES = [
    Case("channels/", "GET", "/channels/", page(200)),
    Case("channels/slack/<int:channel_id>/team-memory/", "POST",
         lambda c: f"/channels/slack/{public_channel(c)}/team-memory/", page(404, admin=302), body={"enabled": "on"}, json=False),
    Case("channels/slack/shares/<int:share_id>/memory/", "POST",
         lambda c: f"/channels/slack/shares/{member_share(c)}/memory/", page(404, member=302), body={"enabled": "on"}, json=False),
    Case("channels/texting/", "GET", "/channels/texting/", WORKSPACE),
    Case("channels/texting/lindy.vcf", "GET", member_texting, page(404, member=200)),
    Case("channels/health/", "GET", "/channels/health/", HEALTH),
    Case("channels/health/opt-outs/", "GET", "/channels/health/opt-outs/", HEALTH),
    Case("channels/health/alerts/<int:alert_id>/acknowledge/", "POST",
         lambda c: f"/channels/health/alerts/{line_alert(c)}/acknowledge/", page(404, support=302, superuser=302),
         body={}, json=False),
    # Unsigned provider webhooks: refused for everyone (secrets unset in tests reject all requests).
    Case("channels/imessage/webhook", "POST", "/channels/imessage/webhook", everyone(401), body={"event_type": "message.received"}),
    Case("channels/sms/webhook", "POST", "/channels/sms/webhook", everyone(401), body={"Body": "hi"}, json=False),
    Case("slack/events", "POST", "/slack/events", everyone(401), body={"type": "event_callback"}),
    Case("slack/install", "GET", "/slack/install", page(404)),
    Case("slack/oauth_redirect", "GET", "/slack/oauth_redirect", everyone(404)),
    Case("api/channels/slack", "GET", "/api/channels/slack", api(200)),
    Case("api/channels/slack/<channel_id>/team-memory", "POST",
         lambda c: f"/api/channels/slack/{public_channel(c)}/team-memory", api(404, admin=200), body={"enabled": True}),
    Case("api/channels/slack/shares/<share_id>/memory", "POST",
         lambda c: f"/api/channels/slack/shares/{member_share(c)}/memory", api(404, member=200), body={"enabled": True}),
    Case("api/channels/texting", "GET", "/api/channels/texting", api(404)),
    Case("api/channels/texting", "POST", "/api/channels/texting", api(200, support=404, superuser=404), body={"phone": "+14155550123"}),
    Case("api/channels/health", "GET", "/api/channels/health", api(404, support=200, superuser=200)),
    Case("api/channels/alerts/<alert_id>/acknowledge", "POST",
         lambda c: f"/api/channels/alerts/{line_alert(c)}/acknowledge", api(404, support=200, superuser=200), body={}),
]
