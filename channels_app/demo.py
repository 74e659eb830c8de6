"""Demo: eight sending numbers with their caps, two Slack channels for Acme, and two weeks of
texting made by the product itself.

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
from urllib.parse import urlencode

from django.test import RequestFactory
from django.utils import timezone

from lindy import simulation
from lindy.demo import DemoFailed, require

from . import demo_providers, services, views
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
DAYS = 14

# (who, their phone, the line they text, over which service)
TEXTERS = [
    ("user@acme.test", "+14155557788", "+14155550102", Channel.IMESSAGE),
    ("sarah@acme.test", "+14155557799", "+14155550101", Channel.IMESSAGE),
    ("admin@acme.test", "+13125557701", SMS_LINE, Channel.SMS),
]
# What each texter writes, by day: a few requests the offline agent acts on (the validator judges
# the emails), and notes it acknowledges. Two texts a minute apart make one bundle.
SCRIPTS = {
    "user@acme.test": [
        ["Send an email to priya@acme.test saying the MSA redline is ready for your review"],
        ["Quick one:", "send an email to jane.park@initech.test saying the renewal draft is on its way"],
        ["Remember that Initech's renewal call moved to Thursday"],
    ],
    "sarah@acme.test": [
        ["Note: never schedule interviews on Fridays"],
        ["Send an email to priya@acme.test saying thanks for the quick contract review"],
    ],
    "admin@acme.test": [
        ["What is on my plate tomorrow?"],
        ["Remind me to check the Northwind PO before paying anything"],
    ],
}
HOURS = {"user@acme.test": 9, "sarah@acme.test": 11, "admin@acme.test": 15}
# On these days (counted from the first) Sarah's phone is off iMessage in the afternoon: the
# provider reports the reply undeliverable and it goes again by SMS, from the SMS line.
SARAH_OFFLINE_DAYS = {9, 10, 11, 12, 13}
PROVIDER_ID_PREFIX = "demo-"


def _line_setup() -> dict[str, SendingNumber]:
    numbers = {}
    for phone, label, kind, cap in NUMBERS:
        numbers[phone], _ = SendingNumber.objects.get_or_create(
            phone=phone, defaults={"label": label, "kind": kind, "daily_cap": cap}
        )
    return numbers


def _slack(ctx) -> None:
    acme = ctx.teams["Acme"]
    installation, _ = SlackInstallation.objects.get_or_create(
        slack_team_id="T0ACMEDEMO",
        defaults={"team": acme, "client_id": "demo", "slack_team_name": "Acme (demo workspace)",
                  "bot_user_id": "U0LINDYBOT", "user_id": "U0ACMEADMN"},
    )
    SlackChannel.objects.get_or_create(
        slack_team_id="T0ACMEDEMO", channel_id="C0GENERAL1",
        defaults={"team": acme, "installation": installation, "name": "general", "is_private": False,
                  "use_for_team_memory": True},
    )
    SlackChannel.objects.get_or_create(
        slack_team_id="T0ACMEDEMO", channel_id="C0ENGINEER",
        defaults={"team": acme, "installation": installation, "name": "engineering", "is_private": False},
    )
    leadership, _ = SlackChannel.objects.get_or_create(
        slack_team_id="T0ACMEDEMO", channel_id="C0LEADERSH",
        defaults={"team": acme, "installation": installation, "name": "leadership", "is_private": True},
    )
    for email, enabled in (("user@acme.test", True), ("admin@acme.test", False)):
        SlackChannelShare.objects.get_or_create(
            channel=leadership, user=ctx.users[email], defaults={"use_for_memory": enabled}
        )


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
        self._post(views.imessage_webhook, "/channels/imessage/webhook", body, "application/json",
                   demo_providers.linq_headers(body))

    def imessage_failed(self, *, message_id: str) -> None:
        body = json.dumps({"event_id": self._event_id(), "event_type": "message.failed",
                           "data": {"message_id": message_id, "reason": "recipient unreachable on iMessage"}}).encode()
        self._post(views.imessage_webhook, "/channels/imessage/webhook", body, "application/json",
                   demo_providers.linq_headers(body))

    def sms(self, *, phone: str, line: str, text: str) -> None:
        path = "/channels/sms/webhook"
        params = {"MessageSid": "SM" + self._event_id(), "From": phone, "To": line, "Body": text, "NumMedia": "0"}
        headers = {"HTTP_X_TWILIO_SIGNATURE": demo_providers.twilio_signature(path, params)}
        self._post(views.sms_webhook, path, urlencode(params).encode(), "application/x-www-form-urlencoded", headers)

    def _post(self, view, path: str, body: bytes, content_type: str, headers: dict) -> None:
        request = self.factory.post(path, data=body, content_type=content_type, **headers)
        response = view(request)
        require("channels", response.status_code == 200,
                f"the {path} webhook answered {response.status_code}: {response.content[:200]!r}")


def _texts_on(email: str, number: int, midnight: datetime) -> bool:
    """Umar texts on working days; Sarah and Ada every other day, and every day of Sarah's
    iMessage trouble (a small team: the demo stays quick to make)."""
    if email == "user@acme.test":
        return midnight.weekday() < 5
    return number in SARAH_OFFLINE_DAYS or number % 2 == 0


def _day(sim: simulation.Simulation, phones: _Phones, ctx, number: int, midnight: datetime, stop: datetime) -> None:
    for email, phone, line, kind in TEXTERS:
        if midnight + timedelta(hours=HOURS[email] + 5) > stop:
            return
        if not _texts_on(email, number, midnight):
            continue
        texts = SCRIPTS[email][number % len(SCRIPTS[email])]
        sim.settle(until=midnight + timedelta(hours=HOURS[email]))
        _text(sim, phones, phone, line, kind, texts)
        if email == "sarah@acme.test" and number in SARAH_OFFLINE_DAYS:
            # Sarah's phone is off iMessage: the provider reports her reply undeliverable and the
            # product sends it again by SMS; she texts again in the afternoon, and the same happens.
            # Two SMS a day for the one text Ada sends the SMS line: a ratio of 3, over the warning.
            _reply_fails(sim, phones, ctx.users[email])
            sim.settle(until=timezone.now() + timedelta(hours=3))
            _text(sim, phones, phone, line, kind, ["Also: what time is the all-hands?"])
            _reply_fails(sim, phones, ctx.users[email])


def _text(sim: simulation.Simulation, phones: _Phones, phone: str, line: str, kind: str, texts: list[str]) -> None:
    """Texts a few seconds apart (one debounce bundle), then the agent's reply."""
    for text in texts:
        (phones.imessage if kind == Channel.IMESSAGE else phones.sms)(phone=phone, line=line, text=text)
        sim.settle(until=timezone.now() + timedelta(seconds=1))
    sim.settle(until=timezone.now() + timedelta(minutes=10))


def _reply_fails(sim: simulation.Simulation, phones: _Phones, user) -> None:
    reply = OutboundMessage.objects.filter(
        user=user, channel=Channel.IMESSAGE, status=OutboundMessage.Status.SENT
    ).order_by("-pk").first()
    if reply is None:
        raise DemoFailed("channels", f"the agent sent {user} no iMessage reply")
    phones.imessage_failed(message_id=reply.provider_id)
    sim.settle(until=timezone.now() + timedelta(minutes=1))


def _traffic(ctx) -> None:
    if InboundMessage.objects.filter(provider_id__startswith=PROVIDER_ID_PREFIX).exists():
        return
    for email, phone, _, _ in TEXTERS:
        if not TextingProfile.objects.filter(user=ctx.users[email]).exists():
            services.profile_register(user=ctx.users[email], phone=phone)
    first = timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=DAYS - 1), time(0)))
    phones = _Phones()
    stop = timezone.now()  # today's texts up to the real time; nothing dated in the future
    with demo_providers.providers(), simulation.simulated(first + timedelta(hours=7)) as sim:
        for number in range(DAYS):
            _day(sim, phones, ctx, number, first + timedelta(days=number), stop)
        sim.settle()


def recount_problems() -> list[str]:
    """The channel health figures against a fresh recount from the stored messages: per line and
    day, texts received and replies sent, and an alert for every day a line ends over a threshold."""
    problems = []
    received: dict[tuple[int, date], int] = {}
    for number_id, at in InboundMessage.objects.filter(number__isnull=False).values_list("number_id", "received_at"):
        key = (number_id, timezone.localdate(at))
        received[key] = received.get(key, 0) + 1
    sent: dict[tuple[int, date], int] = {}
    for number_id, at in OutboundMessage.objects.filter(
        number__isnull=False, status=OutboundMessage.Status.SENT
    ).values_list("number_id", "created_at"):
        key = (number_id, timezone.localdate(at))
        sent[key] = sent.get(key, 0) + 1
    # An iMessage the provider later reported undeliverable was sent (and counted) all the same.
    for number_id, at in OutboundMessage.objects.filter(
        number__isnull=False, status=OutboundMessage.Status.FAILED, channel=Channel.IMESSAGE
    ).exclude(provider_id="").values_list("number_id", "created_at"):
        key = (number_id, timezone.localdate(at))
        sent[key] = sent.get(key, 0) + 1
    rows = {(r.number_id, r.day): r for r in NumberDay.objects.all()}
    alerted = {(a.number_id, a.day): a.level for a in RatioAlert.objects.all()}
    keys: set[tuple[int, date]] = set(rows) | set(received) | set(sent)
    for key in sorted(keys):
        row = rows.get(key)
        counted = (row.sent, row.received) if row else (0, 0)
        recount = (sent.get(key, 0), received.get(key, 0))
        if counted != recount:
            problems.append(f"line {key[0]} on {key[1]}: the page says sent/received {counted}, "
                            f"the stored messages say {recount}")
        level = alerts.level_of(ratio_of(*recount))
        if level is not None and (key not in alerted or alerts.RANK[alerted[key]] < alerts.RANK[level]):
            problems.append(f"line {key[0]} on {key[1]} ends at {ratio_of(*recount)} with no {level} alert")
    return problems


def seed(ctx) -> None:
    _line_setup()
    _slack(ctx)
    _traffic(ctx)
    problems = recount_problems()
    require("channels", not problems, "; ".join(problems[:5]))
    require("channels", RatioAlert.objects.exists(), "two weeks of texting raised no alert on any line")
