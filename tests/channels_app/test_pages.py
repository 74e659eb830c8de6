"""Channels page, memory toggles, texting onboarding, the vCard, channel health and its alerts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from channels_app import selectors, services
from channels_app.models import NumberDay, RatioAlert, SendingNumber, SlackChannel, SlackChannelShare, TextingProfile
from lindy import navigation
from tests.channels_app.factories import SendingNumberFactory, SlackChannelFactory, TextingProfileFactory
from tests.conftest import client_for


@pytest.fixture
def channels(cast):
    public = SlackChannelFactory(team=cast.team, name="general")
    private = SlackChannelFactory(team=cast.team, name="leadership", is_private=True)
    other = SlackChannelFactory(team=cast.other_team, name="globex-general")
    share = SlackChannelShare.objects.create(channel=private, user=cast.member)
    return {"public": public, "private": private, "other": other, "share": share}


def test_admin_sees_team_channels_and_switches_public_ones_on(cast, channels, django_assert_max_num_queries):
    admin = client_for(cast.admin)
    with django_assert_max_num_queries(12):
        page = admin.get("/channels/")
    assert page.status_code == 200
    assert b"#general" in page.content and b"#leadership" in page.content
    assert b"globex-general" not in page.content

    response = admin.post(f"/channels/slack/{channels['public'].pk}/team-memory/", {"enabled": "1"})
    assert response.status_code == 302
    assert list(selectors.memory_channels_for_team(cast.team)) == [channels["public"]]
    htmx = admin.post(f"/channels/slack/{channels['public'].pk}/team-memory/", {"enabled": "0"}, HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200 and b"<tr" in htmx.content and b"<html" not in htmx.content
    assert list(selectors.memory_channels_for_team(cast.team)) == []


def test_private_channels_never_feed_team_memory(cast, channels):
    response = client_for(cast.admin).post(f"/channels/slack/{channels['private'].pk}/team-memory/", {"enabled": "1"})
    assert response.status_code == 302
    channels["private"].refresh_from_db()
    assert channels["private"].use_for_team_memory is False


def test_members_cannot_switch_team_channels_and_other_teams_are_absent(cast, channels):
    member = client_for(cast.member)
    assert member.post(f"/channels/slack/{channels['public'].pk}/team-memory/", {"enabled": "1"}).status_code == 404
    other = client_for(cast.other_admin)
    assert other.post(f"/channels/slack/{channels['public'].pk}/team-memory/", {"enabled": "1"}).status_code == 404
    assert client_for(cast.admin).post("/channels/slack/999999/team-memory/", {"enabled": "1"}).status_code == 404
    assert not SlackChannel.objects.filter(use_for_team_memory=True).exists()


def test_users_switch_their_shared_private_channels_for_their_own_memory(cast, channels):
    member = client_for(cast.member)
    page = member.get("/channels/")
    assert b"#leadership" in page.content and b"#general" not in page.content
    share = channels["share"]
    assert member.post(f"/channels/slack/shares/{share.pk}/memory/", {"enabled": "1"}).status_code == 302
    assert list(selectors.memory_channels_for_user(cast.member)) == [channels["private"]]
    assert list(selectors.memory_channels_for_user(cast.admin)) == []
    # Nobody else can flip it.
    assert client_for(cast.admin).post(f"/channels/slack/shares/{share.pk}/memory/", {"enabled": "0"}).status_code == 404
    channels["private"].active = False
    channels["private"].save()
    assert list(selectors.memory_channels_for_user(cast.member)) == []


def test_memory_selectors_follow_membership(cast, channels):
    channels["share"].use_for_memory = True
    channels["share"].save()
    cast.member.memberships.all().delete()
    assert list(selectors.memory_channels_for_user(cast.member)) == []


def test_texting_onboarding_shows_number_and_vcard(cast, db):
    line = SendingNumberFactory(phone="+14155550100")
    member = client_for(cast.member)
    assert member.get("/channels/texting/lindy.vcf").status_code == 404
    bad = member.post("/channels/texting/", {"phone": "not a phone"})
    assert bad.status_code == 400 and not TextingProfile.objects.exists()
    assert member.post("/channels/texting/", {"phone": "+1 650 555 0101"}).status_code == 302
    page = member.get("/channels/texting/")
    assert b"+14155550100" in page.content and b"lindy.vcf" in page.content
    card = member.get("/channels/texting/lindy.vcf")
    assert card["Content-Type"].startswith("text/vcard")
    text = card.content.decode()
    assert text.startswith("BEGIN:VCARD\r\nVERSION:3.0\r\n") and "TEL;TYPE=CELL,VOICE,pref:+14155550100" in text
    assert TextingProfile.objects.get().number == line


def test_nav_shows_channels_and_health_to_the_right_people(cast):
    keys = lambda user: [item["key"] for item in navigation.items_for(user)]  # noqa: E731
    assert "channels" in keys(cast.member) and "channel-health" not in keys(cast.member)
    assert "channels" in keys(cast.support) and "channel-health" in keys(cast.support)
    assert "channel-health" in keys(cast.superuser)


def _traffic():
    hot = SendingNumberFactory(phone="+13125550105", label="Hot line", daily_cap=100)
    calm = SendingNumberFactory(phone="+14155550101", label="Calm line", daily_cap=100)
    today = timezone.localdate()
    for back in range(10):
        day = today - timedelta(days=back)
        NumberDay.objects.create(number=hot, day=day, sent=60, received=5, fallbacks=1)
        NumberDay.objects.create(number=calm, day=day, sent=15, received=10)
    return hot, calm


def test_health_dashboard_for_support_only_without_bodies(cast, django_assert_max_num_queries):
    hot, calm = _traffic()
    TextingProfileFactory(user=cast.member, number=hot)
    from channels_app.models import OutboundMessage

    OutboundMessage.objects.create(user=cast.member, number=hot, channel="imessage", status="sent",
                                   body="SECRET BODY TEXT")
    support = client_for(cast.support)
    with django_assert_max_num_queries(16):
        page = support.get("/channels/health/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "SECRET BODY TEXT" not in html
    assert 'id="channel-health-data"' in html and "chart.umd.min.js" in html
    over = html.split('id="over-threshold"')[1].split("</table>")[0]
    assert "+13125550105" in over and "+14155550101" not in over and 'data-level="critical"' in over
    assert client_for(cast.superuser).get("/channels/health/").status_code == 200
    for user in (cast.member, cast.admin, cast.other_admin):
        assert client_for(user).get("/channels/health/").status_code == 404


def test_ratio_series_and_thresholds_are_settings(cast):
    hot, calm = _traffic()
    data = selectors.ratio_series(days=14)
    assert len(data["labels"]) == 14
    hot_series = next(s for s in data["series"] if s["number"] == hot.phone)
    assert hot_series["ratio"][-1] == 12.0 and hot_series["ratio"][0] is None
    with override_settings(CHANNELS_RATIO_WARN=100, CHANNELS_RATIO_CRITICAL=200):
        assert selectors.numbers_over_threshold() == []


def test_beat_job_raises_one_alert_per_line_and_day(cast):
    hot, calm = _traffic()
    today = timezone.localdate()
    raised = services.ratio_alerts_check()
    # Today and yesterday (a day whose last sends raised nothing is still alerted), at the highest level.
    assert {(a.number.phone, a.level, a.day) for a in raised} == {
        (hot.phone, "critical", today), (hot.phone, "critical", today - timedelta(days=1))}
    assert services.ratio_alerts_check() == []  # idempotent
    NumberDay.objects.filter(number=calm, day=today).update(sent=25)  # 2.5 > 2
    assert [(a.number, a.level) for a in services.ratio_alerts_check()] == [(calm, "warn")]
    assert RatioAlert.objects.count() == 3
    page = client_for(cast.support).get("/channels/health/")
    assert page.content.decode().count("data-next-step") == 3


def test_beat_entries_are_registered(db):
    from django_celery_beat.models import PeriodicTask

    from lindy import schedules

    schedules.sync()
    names = set(PeriodicTask.objects.values_list("task", flat=True))
    assert {"channels_app.tasks.ratio_alerts_check", "channels_app.tasks.debounce_recover"} <= names


def test_demo_seed_is_idempotent(db):
    call_command("seed_demo")
    call_command("seed_demo")
    assert SendingNumber.objects.count() == 8
    # The rows are the pipeline's counts of the demo's texting (tests/channels_app/test_demo.py).
    assert NumberDay.objects.filter(number__phone="+15125550199").count() >= 3
    over = [row["number"].phone for row in selectors.numbers_over_threshold()]
    assert over == ["+15125550199"]
    assert SlackChannel.objects.filter(team__name="Acme").count() == 3


def test_an_htmx_memory_switch_says_what_it_did_with_its_response(cast):
    """Issue 35 part 1: the row is swapped in place and the outcome comes with that response."""
    import json

    public = SlackChannelFactory(team=cast.team, name="general", use_for_team_memory=True)
    private = SlackChannelFactory(team=cast.team, name="deals", is_private=True)
    share = SlackChannelShare.objects.create(channel=private, user=cast.member)
    hx = {"HTTP_HX_REQUEST": "true"}

    team = client_for(cast.admin).post(f"/channels/slack/{public.pk}/team-memory/", {"enabled": "0"}, **hx)
    assert team.status_code == 200 and "<html" not in team.content.decode()
    assert json.loads(team["HX-Trigger"])["lindy:messages"]["messages"] == [
        {"level": "success", "text": "#general: team memory off."}]
    mine = client_for(cast.member).post(f"/channels/slack/shares/{share.pk}/memory/", {"enabled": "1"}, **hx)
    assert mine.status_code == 200
    assert json.loads(mine["HX-Trigger"])["lindy:messages"]["messages"] == [
        {"level": "success", "text": "#deals: your memory on."}]
