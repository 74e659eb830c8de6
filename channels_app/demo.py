"""Demo data: eight sending numbers with caps, two weeks of traffic (one line over threshold),
a texting profile and two Slack channels for Acme. Idempotent."""

from __future__ import annotations

import random
from datetime import timedelta

from django.utils import timezone

from .models import (
    Channel,
    NumberDay,
    SendingNumber,
    SlackChannel,
    SlackChannelShare,
    SlackInstallation,
    TextingProfile,
)
from .services import pool

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
HOT_LINE = "+13125550105"  # the line the demo shows over threshold


def _traffic(numbers: dict[str, SendingNumber]) -> None:
    today = timezone.localdate()
    rng = random.Random(20261129)
    for phone, number in numbers.items():
        for back in range(14, -1, -1):
            day = today - timedelta(days=back)
            received = rng.randint(40, 120)
            if phone == HOT_LINE and back <= 8:
                received = max(5, received // 6)
                sent = received * rng.randint(11, 14)
            else:
                sent = int(received * rng.uniform(1.1, 1.9))
            if number.kind == Channel.SMS:
                received = rng.randint(8, 15)
                sent = received + rng.randint(0, 5)
            sent = min(sent, number.daily_cap)
            fallbacks = rng.randint(0, 4)
            if not NumberDay.objects.filter(number=number, day=day).exists():
                # Through the service that writes a day's statistics: the hot line's critical days
                # raise their alerts as they are written, as they would in production.
                pool.number_day_record(number=number, day=day, sent=sent, received=received, fallbacks=fallbacks)


def seed(ctx) -> None:
    numbers = {}
    for phone, label, kind, cap in NUMBERS:
        numbers[phone], _ = SendingNumber.objects.get_or_create(
            phone=phone, defaults={"label": label, "kind": kind, "daily_cap": cap}
        )
    _traffic(numbers)

    acme = ctx.teams["Acme"]
    user = ctx.users["user@acme.test"]
    TextingProfile.objects.get_or_create(
        user=user, defaults={"phone": "+14155557788", "number": numbers["+14155550102"],
                             "first_texted_at": timezone.now() - timedelta(days=6), "imessage_capable": True,
                             "capability_checked_at": timezone.now() - timedelta(days=1)},
    )
    installation, _ = SlackInstallation.objects.get_or_create(
        slack_team_id="T0ACMEDEMO",
        defaults={"team": acme, "client_id": "demo", "slack_team_name": "Acme (demo workspace)",
                  "bot_user_id": "U0LINDYBOT", "user_id": "U0ACMEADMN"},
    )
    general, _ = SlackChannel.objects.get_or_create(
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
