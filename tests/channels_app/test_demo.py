"""Issue 34 part 1: the demo's texting is made by the product. Signed webhooks in, the debounce
and the agent, replies out through the provider clients, on a simulated clock: every figure on
the channel health page is a recount of the stored messages, the hot line's alert was raised by
the send that took it over its threshold (issue 34 part 2; no scheduled check runs in the demo),
a second seed sends nothing, and the recount catches a tampered row."""

from __future__ import annotations

from datetime import date

import pytest
from django.core.management import call_command
from django.db.models import F
from django.utils import timezone

from channels_app import demo as channels_demo
from channels_app.models import (
    InboundBundle,
    InboundMessage,
    NumberDay,
    OutboundMessage,
    RatioAlert,
    SendingNumber,
    WebhookEvent,
    ratio_of,
)
from lindy.models import AgentTask, TaskEvent, User
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

FIGURES = ("sent", "received", "fallbacks", "capped")


def _seed() -> None:
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115


def _simple_recount() -> dict[tuple[str, date], tuple[int, int]]:
    """The test's own count, independent of the demo module: texts received and sends that went
    out (an iMessage later reported undeliverable had gone out), per line phone and day."""
    counts: dict[tuple[str, date], list[int]] = {}
    for phone, at in InboundMessage.objects.values_list("number__phone", "received_at"):
        counts.setdefault((phone, at.date()), [0, 0])[1] += 1
    for phone, at, status, channel, provider_id in OutboundMessage.objects.values_list(
            "number__phone", "created_at", "status", "channel", "provider_id"):
        if status == "sent" or (status == "failed" and channel == "imessage" and provider_id):
            counts.setdefault((phone, at.date()), [0, 0])[0] += 1
    return {key: (sent, received) for key, (sent, received) in counts.items()}


def test_the_channel_health_page_is_a_recount_of_the_texts_the_product_stored():
    _seed()
    page = client_for(User.objects.get(email="support@lindy.test")).get("/channels/health/?days=14")
    assert page.status_code == 200
    html = page.content.decode()
    recount = channels_demo.recount()
    mine = _simple_recount()
    phones = dict(SendingNumber.objects.values_list("pk", "phone"))
    assert {(phones[line], day): (f["sent"], f["received"]) for (line, day), f in recount.items()} == mine
    assert sum(received for _, received in mine.values()) >= 12 and len({p for p, _ in mine}) >= 3

    # The line x day grid: every cell, zero where nothing was stored.
    cells = 0
    for row in page.context["grid"]["rows"]:
        for cell in row["cells"]:
            again = recount.get((row["number"].pk, cell["day"]))
            expected = (again["sent"], again["received"]) if again else (0, 0)
            assert (cell["sent"], cell["received"]) == expected, (row["number"].phone, cell["day"])
            if again:
                assert cell["ratio"] == ratio_of(*expected)
                assert cell["alert_level"] == (again["level"] or "")
            cells += bool(again)
    assert cells == len([key for key in recount if key[1] >= page.context["grid"]["days"][0]])
    # The charts' series.
    for line in page.context["chart"]["series"]:
        number = SendingNumber.objects.get(phone=line["number"])
        for index, label in enumerate(page.context["chart"]["labels"]):
            again = recount.get((number.pk, date.fromisoformat(label)))
            for name in ("sent", "received", "fallbacks"):
                assert line[name][index] == (again[name] if again else 0), (line["number"], label, name)
    # Today's table.
    for row in page.context["today_rows"]:
        again = recount.get((row["number"].pk, timezone.localdate()))
        assert tuple(row[name] for name in FIGURES) == tuple(again[name] if again else 0 for name in FIGURES)
    # The 7-day lines over the threshold: the hot line, at its recounted ratio.
    over = page.context["over"]
    assert [row["number"].phone for row in over] == [channels_demo.HOT_LINE]
    hot = over[0]["number"]
    week = [f for (line, day), f in recount.items() if line == hot.pk and day >= page.context["grid"]["days"][7]]
    assert over[0]["ratio"] == ratio_of(sum(f["sent"] for f in week), sum(f["received"] for f in week)) > 2

    # The hot line's alerts are open, first on the page, at the level and figures of the send
    # that took the line over, raised at that very moment (the simulated clock stood still).
    alerts = RatioAlert.objects.filter(number=hot).order_by("day")
    assert alerts.exists() and set(alerts.values_list("level", flat=True)) == {"warn"}
    assert [a.pk for a in page.context["open_alerts"]] == list(alerts.order_by("-day").values_list("pk", flat=True))
    for alert in alerts:
        assert alert.acknowledged_at is None and f'id="alert-{alert.pk}"' in html
        again = recount[(hot.pk, alert.day)]
        assert (alert.level, (alert.sent, alert.received, alert.ratio)) == (again["level"], again["alert_figures"])
        took_it_over = OutboundMessage.objects.filter(number=hot, created_at__date=alert.day, status="sent",
                                                      fallback_reason="imessage_failed").order_by("-created_at")
        assert alert.created_at == took_it_over.first().created_at
    assert RatioAlert.objects.count() == alerts.count()
    assert channels_demo.recount_problems() == []

    # It all came through the product: each text and delivery report a signed webhook, claimed
    # once; each text debounced into a bundle the agent answered; its replies through the gate.
    failed = OutboundMessage.objects.filter(status="failed", channel="imessage")
    assert WebhookEvent.objects.count() == InboundMessage.objects.count() + failed.count() > 0
    assert set(WebhookEvent.objects.values_list("source", flat=True)) == {"linq", "twilio"}
    assert not InboundMessage.objects.filter(bundle__isnull=True).exists()
    assert set(InboundBundle.objects.values_list("status", flat=True)) == {"dispatched"}
    assert OutboundMessage.objects.filter(status="sent", fallback_reason="imessage_failed").count() == failed.count()
    umar = AgentTask.objects.filter(owner__email="user@acme.test", events__actor="user",
                                    events__content__contains="the renewal draft is on its way").distinct().get()
    assert umar.events.filter(actor=TaskEvent.Actor.ASSISTANT, tool_name="send_email").exists()
    assert umar.events.filter(actor=TaskEvent.Actor.TOOL, tool_name="reply_to_user").exists()

    # A second seed sends nothing and changes no figure.
    before = [model.objects.count() for model in (InboundMessage, OutboundMessage, NumberDay, RatioAlert, AgentTask)]
    figures = list(NumberDay.objects.order_by("pk").values_list(*FIGURES))
    _seed()
    assert [model.objects.count() for model in (InboundMessage, OutboundMessage, NumberDay, RatioAlert, AgentTask)] \
        == before
    assert list(NumberDay.objects.order_by("pk").values_list(*FIGURES)) == figures

    # A figure written by anything but the pipeline is caught: a row with sends nobody made, a
    # text deleted from under its count, an alert lowered.
    row = NumberDay.objects.filter(number__phone="+14155550102").order_by("day").first()
    NumberDay.objects.filter(pk=row.pk).update(sent=F("sent") + 5)
    problems = channels_demo.recount_problems()
    assert len(problems) == 1 and f"+14155550102 on {row.day}" in problems[0] and "'sent': " in problems[0]
    NumberDay.objects.filter(pk=row.pk).update(sent=F("sent") - 5)
    InboundMessage.objects.filter(number__phone="+14155550101").order_by("pk").first().delete()
    assert any("+14155550101" in problem for problem in channels_demo.recount_problems())
    RatioAlert.objects.filter(pk=alerts.first().pk).update(ratio=9.5)
    assert any(channels_demo.HOT_LINE in problem and "alert" in problem for problem in channels_demo.recount_problems())


# --- Slack (issue 34 part 1, the Slack share) ----------------------------------------------------


def _slack_counts() -> list[int]:
    from channels_app.models import SlackChannel, SlackChannelShare, SlackEvent, SlackInstallation, SlackOAuthState
    from lindy.models import AuditEntry
    return [model.objects.count() for model in (SlackInstallation, SlackOAuthState, SlackChannel, SlackChannelShare,
                                                 SlackEvent, AuditEntry)]


def test_the_demo_installs_slack_and_its_channels_through_the_products_endpoints():
    from channels_app import demo_slack
    from channels_app.models import SlackChannel, SlackChannelShare, SlackEvent, SlackInstallation, SlackOAuthState
    from lindy.models import AuditEntry

    _seed()
    installation = SlackInstallation.objects.get(slack_team_id="T0ACMEDEMO")
    assert installation.team.name == "Acme" and installation.bot_user_id == "U0LINDYBOT"
    assert installation.app_id == "A0LINDYDEMO"  # from oauth.v2.access, answered by the local fake
    assert SlackOAuthState.objects.filter(team=installation.team, consumed_at__isnull=False).count() == 1
    assert AuditEntry.objects.filter(action="slack_installation.connected", actor__email="admin@acme.test").count() == 1
    # The demo's token is gone: the scheduled hydration never sends it to the real Slack.
    assert installation.bot_token == "" and installation.bot_refresh_token == ""

    channels = {c.channel_id: c for c in SlackChannel.objects.filter(slack_team_id="T0ACMEDEMO")}
    assert {(c.name, c.is_private, c.active, c.installation_id, c.inviter_slack_id) for c in channels.values()} == {
        ("general", False, True, installation.pk, "U0ACMEADMN"),
        ("engineering", False, True, installation.pk, "U0ACMEADMN"),
        ("leadership", True, True, installation.pk, "U0ACMEADMN"),
    }
    # Each channel came from the bot's member_joined_channel event, processed by the product's task.
    events = SlackEvent.objects.filter(slack_team_id="T0ACMEDEMO")
    assert sorted(events.values_list("event_id", "event_type", "status", "attempts")) == sorted(
        (demo_slack.event_id(cid), "member_joined_channel", "done", 1) for cid in channels)
    # The switches: the product's default (public channels feed team memory) and Ada switching
    # #engineering off; Umar turning #leadership on for his own memory. Both audited.
    assert channels["C0GENERAL1"].use_for_team_memory and not channels["C0ENGINEER"].use_for_team_memory
    assert not channels["C0LEADERSH"].use_for_team_memory
    team_switch = AuditEntry.objects.get(action="slack_channel.team_memory_set")
    assert team_switch.actor.email == "admin@acme.test" and team_switch.after == {"use_for_team_memory": False}
    shares = dict(SlackChannelShare.objects.filter(channel=channels["C0LEADERSH"])
                  .values_list("user__email", "use_for_memory"))
    assert shares == {"user@acme.test": True, "admin@acme.test": False}
    share_switch = AuditEntry.objects.get(action="slack_channel_share.memory_set")
    assert share_switch.actor.email == "user@acme.test" and share_switch.after == {"use_for_memory": True}

    # The pages: Ada sees the three channels (a private one by its existence only, as the product
    # shows it), Umar his #leadership share.
    html = client_for(User.objects.get(email="admin@acme.test")).get("/channels/").content.decode()
    assert "#general" in html and "#engineering" in html
    html = client_for(User.objects.get(email="user@acme.test")).get("/channels/").content.decode()
    assert "leadership" in html

    before = _slack_counts()
    _seed()
    assert _slack_counts() == before


def test_the_demo_writes_no_slack_channel_itself():
    import ast
    from pathlib import Path

    source = Path(channels_demo.__file__).read_text()
    writes = [node for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Attribute) and node.attr in {"create", "get_or_create", "update_or_create",
                                                                      "bulk_create"}
              and isinstance(node.value, ast.Attribute) and node.value.attr == "objects"
              and isinstance(node.value.value, ast.Name)
              and node.value.value.id in {"SlackChannel", "SlackChannelShare", "SlackInstallation", "SlackEvent"}]
    assert not writes, [ast.unparse(node) for node in writes]
