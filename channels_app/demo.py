"""Demo: eight sending numbers with their caps, Acme's Slack (installed and its three channels
added through the product's own OAuth and events endpoints) and two weeks of texting made by the
product itself.

No traffic row is written here. On a simulated clock (lindy.simulation), three demo people text
the assistant: each text is a webhook signed the way its provider signs it, posted to the
product's own iMessage or SMS endpoint; the debounce bundles it, the agent (the offline rules)
answers through the pre-send gate, and the replies go out through the real provider clients to a
local fake of each provider (channels_app.demo_providers). When the provider reports an iMessage
reply undeliverable (its message.failed webhook), the product resends it by SMS. So the per-line
counters, the ratios, the SMS line over its threshold and its alert are the pipeline's own.
`recount_problems` checks the figures against a recount of the stored messages.
Idempotent: once the demo's texts are stored, nothing runs again.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

from django.db.models import Q
from django.test import RequestFactory
from django.urls import resolve, reverse
from django.utils import timezone

from lindy import simulation
from lindy.demo import DemoFailed, require

from . import demo_providers, demo_slack, services
from .models import (
    Channel,
    InboundMessage,
    NumberDay,
    OutboundMessage,
    RatioAlert,
    SendingNumber,
    SlackChannel,
    SlackChannelShare,
    SlackInstallation,
    TextingProfile,
    ratio_of,
)
from .services import alerts

NUMBERS = [
    ("+14155550101", "Line 1 (SF)", Channel.IMESSAGE, 600),
    ("+14155550102", "Line 2 (SF)", Channel.IMESSAGE, 600),
    ("+12125550103", "Line 3 (NYC)", Channel.IMESSAGE, 500),
    ("+12125550104", "Line 4 (NYC)", Channel.IMESSAGE, 500),
    ("+13125550105", "Line 5 (CHI)", Channel.IMESSAGE, 400),
    ("+13125550106", "Line 6 (CHI)", Channel.IMESSAGE, 400),
    ("+15125550107", "Line 7 (AUS)", Channel.IMESSAGE, 300),
    ("+15125550199", "SMS fallback", Channel.SMS, 2000),
]
SMS_LINE = "+15125550199"
HOT_LINE = SMS_LINE  # the line the demo's texting takes over its warning threshold
DAYS = 14  # the last 13 days and today (today's texts only up to the real time)

# (who, their phone, the line they text, over which service)
TEXTERS = {
    "user@acme.test": ("+14155557788", "+14155550102", Channel.IMESSAGE),
    "sarah@acme.test": ("+14155557799", "+14155550101", Channel.IMESSAGE),
    "admin@acme.test": ("+13125557701", SMS_LINE, Channel.SMS),
}
# A few texts a week from a small team: requests the offline agent acts on (the validator judges
# the emails) and notes it acknowledges. Texts in one entry come seconds apart: one debounce bundle,
# one turn of the agent. (day counted from the first of the DAYS, hour, who, texts, Sarah's phone
# off iMessage). When it is off, the provider reports her iMessage reply undeliverable (its
# message.failed webhook) and the product sends it again by SMS, from the SMS line: on such a day
# Sarah's two replies and Ada's one make three SMS for the one text the SMS line received, a
# ratio of 3, over the warning threshold (2): the pattern, not the volume, makes the hot line.
SCRIPT = [
    (1, 9, "user@acme.test", ["Send an email to priya@acme.test saying the MSA redline is ready for your review"], False),
    (2, 11, "sarah@acme.test", ["Note: never schedule interviews on Fridays"], False),
    (4, 9, "user@acme.test", ["Quick one:", "send an email to jane.park@initech.test saying the renewal draft is on its way"], False),
    (4, 15, "admin@acme.test", ["What is on my plate tomorrow?"], False),
    (7, 9, "user@acme.test", ["Remember that Initech's renewal call moved to Thursday"], False),
    (9, 10, "admin@acme.test", ["Remind me to check the Northwind PO before paying anything"], False),
    (9, 11, "sarah@acme.test", ["Send an email to priya@acme.test saying thanks for the quick contract review"], True),
    (9, 16, "sarah@acme.test", ["Also: what time is the all-hands?"], True),
    (11, 10, "admin@acme.test", ["Did Northwind send the PO yet?"], False),
    (11, 11, "sarah@acme.test", ["Note: the hiring sync moves to Tuesdays"], True),
    (11, 16, "sarah@acme.test", ["Is my phone back on iMessage?"], True),
    (12, 9, "user@acme.test", ["Send an email to priya@acme.test saying the signed MSA is attached"], False),
    (13, 7, "user@acme.test", ["Morning! Remember the board deck is due Friday"], False),
]
PROVIDER_ID_PREFIX = "demo-"


def _line_setup() -> dict[str, SendingNumber]:
    numbers = {}
    for phone, label, kind, cap in NUMBERS:
        numbers[phone], _ = SendingNumber.objects.get_or_create(
            phone=phone, defaults={"label": label, "kind": kind, "daily_cap": cap}
        )
    return numbers


def _slack(ctx, start: datetime) -> None:
    """Acme's Slack, made by the product: Ada (Acme's team admin) installs the app through the
    product's OAuth install and callback, then Slack tells the events endpoint the assistant was
    added to #general, #engineering and #leadership (member_joined_channel, signed as Slack signs
    it); the product's event task reads each channel from the Web API (conversations.info, and the
    members of the private one) and registers it. Slack's side is a local fake
    (channels_app.demo_slack). Then the switches, through the services the channel pages call: Ada
    takes #engineering out of team memory, Umar turns #leadership on for his own memory.
    Afterwards the demo's bot token (the fake's, worthless elsewhere) is dropped, so the scheduled
    hydration never sends it to the real Slack: it lists these channels as having no bot token.
    Channel messages are acknowledged by the endpoint and never stored (hydration reads them from
    the history), so none are sent here. Idempotent: once the three channels exist, nothing runs."""
    channels = SlackChannel.objects.filter(slack_team_id=demo_slack.TEAM_ID, channel_id__in=demo_slack.CHANNELS)
    if channels.count() == len(demo_slack.CHANNELS):
        return
    acme, admin = ctx.teams["Acme"], ctx.users["admin@acme.test"]
    factory = RequestFactory()
    with demo_slack.slack(), simulation.simulated(start) as sim:
        if not SlackInstallation.objects.filter(slack_team_id=demo_slack.TEAM_ID).exists():
            _slack_install(factory, acme, admin)
        for channel_id in demo_slack.CHANNELS:
            body, headers = demo_slack.bot_joined(channel_id)
            path = reverse("slack-events")
            response = resolve(path).func(factory.post(path, data=body, content_type="application/json", **headers))
            require("channels", response.status_code == 200,
                    f"the {path} endpoint answered {response.status_code}: {response.content[:200]!r}")
            sim.settle(until=timezone.now() + timedelta(minutes=1))
        sim.settle()
    require("channels", channels.count() == len(demo_slack.CHANNELS),
            f"the bot's member_joined_channel events registered {channels.count()} of {len(demo_slack.CHANNELS)} channels")
    engineering = channels.get(channel_id="C0ENGINEER")
    services.slack_team_memory_set(channel=engineering, enabled=False, actor=admin)
    share = SlackChannelShare.objects.filter(channel__channel_id="C0LEADERSH", user=ctx.users["user@acme.test"]).first()
    if share is None:
        raise DemoFailed("channels", "#leadership's members were not matched to Acme's people")
    services.slack_private_memory_set(share=share, enabled=True, actor=ctx.users["user@acme.test"])
    # The token is encrypted at rest: the demo's installation is known by the demo app's client id.
    SlackInstallation.objects.filter(slack_team_id=demo_slack.TEAM_ID, client_id=demo_slack.CLIENT_ID).update(
        bot_token="", bot_refresh_token="")


def _slack_install(factory: RequestFactory, acme, admin) -> None:
    """Ada follows the channels page's Install link; Slack sends her back with a code."""
    path = reverse("slack-install")
    request = factory.get(path, {"team": acme.pk})
    request.user = admin
    started = resolve(path).func(request)
    require("channels", started.status_code == 302, f"the Slack install answered {started.status_code}")
    state = parse_qs(urlsplit(started["Location"]).query)["state"][0]
    cookies = "; ".join(f"{name}={morsel.value}" for name, morsel in started.cookies.items())
    path = reverse("slack-oauth-redirect")
    request = factory.get(path, {"code": demo_slack.CODE, "state": state}, HTTP_COOKIE=cookies)
    request.user = admin
    done = resolve(path).func(request)
    require("channels", done.status_code == 200 and SlackInstallation.objects.filter(
        slack_team_id=demo_slack.TEAM_ID, team=acme).exists(),
            f"the Slack OAuth callback answered {done.status_code}: {done.content[:200]!r}")


class _Phones:
    """The demo people's phones: they text the product's webhooks as their provider delivers them."""

    def __init__(self):
        self.factory = RequestFactory()
        self.sent = 0

    def _event_id(self) -> str:
        self.sent += 1
        return f"{PROVIDER_ID_PREFIX}{self.sent:05d}"

    def imessage(self, *, phone: str, line: str, text: str) -> None:
        event_id = self._event_id()
        body = json.dumps({
            "event_id": event_id, "event_type": "message.received", "created_at": timezone.now().isoformat(),
            "data": {"direction": "inbound", "service": "iMessage", "parts": [{"type": "text", "value": text}],
                     "sender_handle": {"handle": phone},
                     "chat": {"id": f"chat-{phone[1:]}", "is_group": False, "owner_handle": {"handle": line}}},
        }).encode()
        self._post("channels-imessage-webhook", body, "application/json", demo_providers.linq_headers(body))

    def imessage_failed(self, *, message_id: str) -> None:
        body = json.dumps({"event_id": self._event_id(), "event_type": "message.failed",
                           "data": {"message_id": message_id, "reason": "recipient unreachable on iMessage"}}).encode()
        self._post("channels-imessage-webhook", body, "application/json", demo_providers.linq_headers(body))

    def sms(self, *, phone: str, line: str, text: str) -> None:
        path = reverse("channels-sms-webhook")
        params = {"MessageSid": "SM" + self._event_id(), "From": phone, "To": line, "Body": text, "NumMedia": "0"}
        headers = {"HTTP_X_TWILIO_SIGNATURE": demo_providers.twilio_signature(path, params)}
        self._post("channels-sms-webhook", urlencode(params).encode(), "application/x-www-form-urlencoded", headers)

    def _post(self, url_name: str, body: bytes, content_type: str, headers: dict) -> None:
        """POST to the endpoint the URL resolves to, as the provider would (the view, not its service)."""
        path = reverse(url_name)
        request = self.factory.post(path, data=body, content_type=content_type, **headers)
        response = resolve(path).func(request)
        require("channels", response.status_code == 200,
                f"the {path} webhook answered {response.status_code}: {response.content[:200]!r}")


def _text(sim: simulation.Simulation, phones: _Phones, email: str, texts: list[str]) -> None:
    """Texts a second apart (one debounce bundle), then the debounce, the agent's turn and its reply."""
    phone, line, kind = TEXTERS[email]
    for text in texts:
        (phones.imessage if kind == Channel.IMESSAGE else phones.sms)(phone=phone, line=line, text=text)
        sim.settle(until=timezone.now() + timedelta(seconds=1))
    sim.settle(until=timezone.now() + timedelta(minutes=5))


def _reply_fails(sim: simulation.Simulation, phones: _Phones, user) -> None:
    """The provider reports the agent's last iMessage reply undeliverable."""
    reply = OutboundMessage.objects.filter(
        user=user, channel=Channel.IMESSAGE, status=OutboundMessage.Status.SENT
    ).order_by("-pk").first()
    if reply is None:
        raise DemoFailed("channels", f"the agent sent {user} no iMessage reply")
    phones.imessage_failed(message_id=reply.provider_id)
    sim.settle(until=timezone.now() + timedelta(minutes=1))


def _traffic(ctx) -> None:
    if InboundMessage.objects.filter(provider_id__contains=PROVIDER_ID_PREFIX).exists():
        return
    for email, (phone, _, _) in TEXTERS.items():
        if not TextingProfile.objects.filter(user=ctx.users[email]).exists():
            services.profile_register(user=ctx.users[email], phone=phone)
    first = timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=DAYS - 1), time(0)))
    stop = timezone.now()  # today's texts up to the real time: nothing dated in the future
    phones = _Phones()
    with demo_providers.providers(), simulation.simulated(first + timedelta(hours=7)) as sim:
        for day, hour, email, texts, phone_off_imessage in SCRIPT:
            at = first + timedelta(days=day, hours=hour)
            if at + timedelta(minutes=10) > stop:
                break
            sim.settle(until=at)
            _text(sim, phones, email, texts)
            if phone_off_imessage:
                _reply_fails(sim, phones, ctx.users[email])
        sim.settle()


Key = tuple[int, date]  # (line, day)
# The fallbacks an iMessage line counts: each one is an SMS sent (or tried) in its place.
FALLBACK_REASONS = (OutboundMessage.Fallback.CAP, OutboundMessage.Fallback.NOT_IMESSAGE,
                    OutboundMessage.Fallback.IMESSAGE_FAILED)


def _day_of(at: datetime) -> date:
    return timezone.localdate(at)


def recount() -> dict[Key, dict]:
    """Each line's day recounted from the stored messages alone: texts received (by the line they
    were sent to), sends (every send that went out: a reply, a fallback SMS, a consent notice, and
    an iMessage the provider took and later reported undeliverable), fallbacks (the SMS sent in
    place of a texter's iMessage, on their iMessage line) and caps hit (fallbacks for a full line),
    and the alert level each day reached: the ratio is replayed message by message, in the order
    they happened, and a line's alert is at the highest level any send took it to (alerts are
    raised by sends and never lowered)."""
    days: dict[Key, dict] = {}

    def day(key: Key) -> dict:
        return days.setdefault(key, {"sent": 0, "received": 0, "fallbacks": 0, "capped": 0, "events": []})

    for number_id, at in InboundMessage.objects.filter(number__isnull=False).values_list("number_id", "received_at"):
        entry = day((number_id, _day_of(at)))
        entry["received"] += 1
        entry["events"].append((at, 0, "received"))
    went_out = OutboundMessage.objects.filter(number__isnull=False).filter(
        Q(status=OutboundMessage.Status.SENT)
        | Q(status=OutboundMessage.Status.FAILED, channel=Channel.IMESSAGE) & ~Q(provider_id=""))
    for number_id, at in went_out.values_list("number_id", "created_at"):
        entry = day((number_id, _day_of(at)))
        entry["sent"] += 1
        entry["events"].append((at, 1, "sent"))
    fell_back = OutboundMessage.objects.filter(channel=Channel.SMS, fallback_reason__in=FALLBACK_REASONS,
                                               profile__number__kind=Channel.IMESSAGE)
    for line_id, at, reason in fell_back.values_list("profile__number_id", "created_at", "fallback_reason"):
        entry = day((line_id, _day_of(at)))
        entry["fallbacks"] += 1
        entry["capped"] += reason == OutboundMessage.Fallback.CAP
    for entry in days.values():
        sent = received = 0
        entry["level"], entry["alert_figures"] = None, None
        # Same instant: the text is counted before the send (a send never precedes its cause).
        for _, _, kind in sorted(entry.pop("events")):
            if kind == "received":
                received += 1
                continue
            sent += 1
            level = alerts.level_of(ratio_of(sent, received))
            if level is not None and (entry["level"] is None or alerts.RANK[level] > alerts.RANK[entry["level"]]):
                entry["level"], entry["alert_figures"] = level, (sent, received, ratio_of(sent, received))
    return days


def recount_problems() -> list[str]:
    """Where the channel health page's figures differ from the recount: each line-day's sent,
    received, fallbacks and caps hit (the grid, the charts, today's table, the 7-day lines over the
    threshold are all read from these rows), and each alert's level and figures."""
    problems = []
    counted = {(r.number_id, r.day): r for r in NumberDay.objects.all()}
    alerted = {(a.number_id, a.day): a for a in RatioAlert.objects.all()}
    recounted = recount()
    names = dict(SendingNumber.objects.values_list("pk", "phone"))
    for key in sorted(set(counted) | set(recounted) | set(alerted)):
        where = f"line {names.get(key[0], key[0])} on {key[1]}"
        row, again = counted.get(key), recounted.get(key)
        figures = {name: getattr(row, name) if row else 0 for name in ("sent", "received", "fallbacks", "capped")}
        expected = {name: again[name] if again else 0 for name in figures}
        if figures != expected:
            problems.append(f"{where}: the page says {figures}, the stored messages say {expected}")
        alert, level = alerted.get(key), again["level"] if again else None
        shown = (alert.level, (alert.sent, alert.received, alert.ratio)) if alert else (None, None)
        if shown != (level, again["alert_figures"] if again else None):
            problems.append(f"{where}: the alert shown is {shown}, the replayed messages say "
                            f"{(level, again['alert_figures'] if again else None)}")
    return problems


def seed(ctx) -> None:
    _line_setup()
    first = timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=DAYS - 1), time(0)))
    _slack(ctx, first + timedelta(hours=6))
    _traffic(ctx)
    problems = recount_problems()
    require("channels", not problems, "; ".join(problems[:5]))
    require("channels", RatioAlert.objects.filter(number__phone=HOT_LINE).exists(),
            f"two weeks of texting raised no alert on the hot line {HOT_LINE}")
