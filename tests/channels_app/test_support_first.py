"""Issue 35 part 5, "Support first": on the channel health page the open alerts come first, named
by line ("Line 5 · CHI"), each with its next step and an acknowledge form that takes a note; a
line × day table with the ratio and level per cell, in a bounded number of queries; an alert for
each line-day over a threshold when the statistics are written; alert emails with absolute links
(LINDY_BASE_URL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.test import override_settings
from django.utils import timezone

from channels_app import selectors, services
from channels_app.lines import line_name
from channels_app.models import NumberDay, RatioAlert
from channels_app.services import pool, queue
from lindy import queue as lindy_queue
from tests.channels_app.factories import SendingNumberFactory
from tests.conftest import client_for


@pytest.fixture
def queued(monkeypatch):
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(lindy_queue, "enqueue", lambda name, *args, countdown=None: sent.append((name, args)))
    return sent


def test_lines_have_names_people_say():
    assert line_name(label="Line 5 (CHI)", phone="+13125550105") == "Line 5 · CHI"
    assert line_name(label="Line 3 - NYC", phone="+12125550103") == "Line 3 · NYC"
    assert line_name(label="West 1", phone="+14155550100") == "West 1 · SF"
    assert line_name(label="", phone="+13125550105") == "Line …0105 · CHI"
    assert line_name(label="", phone="+15125550199", kind="sms") == "SMS line …0199 · AUS"
    assert line_name(label="", phone="+16055550100") == "Line …0100 · 605"  # an area with no city known
    assert line_name(label="", phone="+447700900123") == "Line …0123 · +44"


def test_a_line_critical_for_nine_days_has_nine_alerts_when_its_statistics_are_written(db, queued,
                                                                                       django_capture_on_commit_callbacks):
    hot, calm = SendingNumberFactory(label="Line 5 (CHI)"), SendingNumberFactory()
    today = timezone.localdate()
    with django_capture_on_commit_callbacks(execute=True):
        for back in range(14):
            day = today - timedelta(days=back)
            pool.number_day_record(number=hot, day=day, sent=120 if back < 9 else 30, received=10)  # 12, then 3
            pool.number_day_record(number=calm, day=day, sent=15, received=10)
    alerts = RatioAlert.objects.filter(number=hot)
    assert sorted(alerts.filter(level="critical").values_list("day", flat=True)) == [
        today - timedelta(days=back) for back in range(8, -1, -1)]
    assert alerts.filter(level="warn").count() == 5 and not RatioAlert.objects.filter(number=calm).exists()
    assert [name for name, _ in queued] == [queue.RATIO_ALERT_NOTIFY] * 14  # each told once
    # Written again (a provider's figures re-imported): nothing new raised, nobody told twice.
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        pool.number_day_record(number=hot, day=today, sent=120, received=10)
        assert services.ratio_alerts_check(days=14) == []
    assert queued == [] and RatioAlert.objects.count() == 14
    # A warning day whose figures are rewritten over critical escalates.
    with django_capture_on_commit_callbacks(execute=True):
        pool.number_day_record(number=hot, day=today - timedelta(days=10), sent=200, received=10)
    escalated = RatioAlert.objects.get(number=hot, day=today - timedelta(days=10))
    assert (escalated.level, escalated.escalated_at is not None) == ("critical", True)
    with pytest.raises(ValueError):
        pool.number_day_record(number=hot, day=today, sent=-1, received=0)


def test_one_send_straight_over_critical_raises_a_critical_alert_and_an_escalation_asks_again(
        cast, queued, django_capture_on_commit_callbacks):
    line = SendingNumberFactory(daily_cap=1000)
    NumberDay.objects.create(number=line, day=timezone.localdate(), sent=0, received=2)
    with django_capture_on_commit_callbacks(execute=True):
        pool.stat_add(number=line, field="sent", amount=30)  # 15: over 10 in one count
    alert = RatioAlert.objects.get()
    assert (alert.level, alert.sent) == ("critical", 30) and len(queued) == 1

    other = SendingNumberFactory(daily_cap=1000)
    NumberDay.objects.create(number=other, day=timezone.localdate(), sent=0, received=10)
    with django_capture_on_commit_callbacks(execute=True):
        pool.stat_add(number=other, field="sent", amount=25)  # 2.5: a warning
    warning = RatioAlert.objects.get(number=other)
    assert services.ratio_alert_acknowledge(alert=warning, user=cast.support, note="watching it")
    with django_capture_on_commit_callbacks(execute=True):
        pool.stat_add(number=other, field="sent", amount=100)  # 12.5: critical
    warning.refresh_from_db()
    assert warning.level == "critical" and warning.escalated_at is not None
    assert warning.acknowledged_at is None and warning.acknowledged_by is None  # support is asked again
    assert len(queued) == 3


def _alert(number, *, level="critical", back=0, ratio=12.0):
    return RatioAlert.objects.create(number=number, day=timezone.localdate() - timedelta(days=back), level=level,
                                     ratio=ratio, sent=int(ratio * 10), received=10,
                                     threshold=10.0 if level == "critical" else 2.0)


def test_open_alerts_come_first_named_by_line_with_a_next_step(cast):
    chi = SendingNumberFactory(phone="+13125550105", label="Line 5 (CHI)")
    sf = SendingNumberFactory(phone="+14155550102", label="Line 2 (SF)")
    warn = _alert(sf, level="warn", ratio=3.0)
    critical = _alert(chi, back=1)
    done = _alert(chi, back=2)
    services.ratio_alert_acknowledge(alert=done, user=cast.support, note="Paused the campaign")
    html = client_for(cast.support).get("/channels/health/").content.decode()
    main = html.split("<main", 1)[-1]
    positions = [main.index(marker) for marker in
                 ('id="open-alerts"', 'id="line-days"', 'id="over-threshold"', 'id="ratio-chart"',
                  'id="acknowledged-alerts"')]
    assert positions == sorted(positions)
    open_part = main.split('id="open-alerts"')[1].split('id="line-days"')[0]
    # Critical before warning; each named by its line, with the step for its level.
    assert open_part.index(f'id="alert-{critical.pk}"') < open_part.index(f'id="alert-{warn.pk}"')
    assert f'id="alert-{done.pk}"' not in open_part
    assert "Line 5 · CHI" in open_part and "Line 2 · SF" in open_part
    assert "unprompted sends are stopped" in open_part and "slow unprompted follow-ups" in open_part
    assert open_part.count('name="note"') == 2
    acknowledged = main.split('id="acknowledged-alerts"')[1]
    assert f'id="alert-{done.pk}"' in acknowledged and "Paused the campaign" in acknowledged
    # Who acknowledged it, by the name they chose (the email in a tooltip), in one cell of its row.
    row = acknowledged.split(f'id="alert-{done.pk}"')[1].split("</tr>")[0]
    assert row.count("<td") == 7 and f'title="{cast.support.email}">{cast.support.display_name}<' in row


def test_support_acknowledges_with_a_note_and_is_told_where_it_acted(cast):
    alert = _alert(SendingNumberFactory(phone="+13125550105", label="Line 5 (CHI)"))
    url = f"/channels/health/alerts/{alert.pk}/acknowledge/"
    support = client_for(cast.support)
    assert client_for(cast.member).post(url, {"note": "x"}).status_code == 404
    too_long = support.post(url, {"note": "x" * 501})
    assert too_long.status_code == 302 and too_long["Location"].endswith(f"#alert-{alert.pk}")
    alert.refresh_from_db()
    assert alert.acknowledged_at is None
    page = support.post(url, {"note": "Moved the campaign to line 2"}, follow=True)
    html = page.content.decode()
    assert "Acknowledged the critical alert on Line 5 · CHI" in html
    alert.refresh_from_db()
    assert (alert.acknowledged_by, alert.acknowledge_note) == (cast.support, "Moved the campaign to line 2")
    assert "No open alerts" in html
    again = support.post(url, {"note": "other"}, follow=True).content.decode()
    assert "was already acknowledged" in again
    alert.refresh_from_db()
    assert alert.acknowledge_note == "Moved the campaign to line 2"


def test_acknowledging_with_htmx_swaps_the_alert_for_its_outcome(cast):
    alert = _alert(SendingNumberFactory())
    url = f"/channels/health/alerts/{alert.pk}/acknowledge/"
    support = client_for(cast.support)
    assert support.post(url, {"note": "y" * 501}, HTTP_HX_REQUEST="true").status_code == 400
    swapped = support.post(url, {"note": "Looked at it"}, HTTP_HX_REQUEST="true")
    html = swapped.content.decode()
    assert swapped.status_code == 200 and "<html" not in html
    assert f'id="alert-{alert.pk}"' in html and 'role="status"' in html and "Looked at it" in html
    assert 'name="note"' not in html


def test_the_line_by_day_table_shows_ratio_and_level_per_cell(cast):
    hot = SendingNumberFactory(phone="+13125550105", label="Line 5 (CHI)")
    today = timezone.localdate()
    NumberDay.objects.create(number=hot, day=today, sent=120, received=10)
    NumberDay.objects.create(number=hot, day=today - timedelta(days=1), sent=30, received=10)
    NumberDay.objects.create(number=hot, day=today - timedelta(days=2), sent=10, received=10)
    _alert(hot)
    grid = selectors.line_day_grid([hot], days=7)
    cells = grid["rows"][0]["cells"]
    assert [c["day"] for c in cells] == [today - timedelta(days=back) for back in range(6, -1, -1)]
    assert [(c["ratio"], c["level"]) for c in cells[-3:]] == [(1.0, ""), (3.0, "warn"), (12.0, "critical")]
    assert cells[0]["ratio"] is None and (cells[-1]["alert_level"], cells[-1]["alert_open"]) == ("critical", True)
    support = client_for(cast.support)
    table = support.get("/channels/health/?days=7").content.decode().split('id="line-day-table"')[1].split("</table>")[0]
    assert table.count("<td data-day=") == 7 and "Line 5 · CHI" in table
    assert f'data-day="{today:%Y-%m-%d}" data-level="critical"' in table
    assert f'data-day="{today - timedelta(days=1):%Y-%m-%d}" data-level="warn"' in table
    wide = support.get("/channels/health/").content.decode().split('id="line-day-table"')[1].split("</table>")[0]
    assert wide.count("<td data-day=") == 14
    assert support.get("/channels/health/?days=99999").status_code == 200  # clamped to 14


def _health_queries(client, django_assert_max_num_queries, bound: int, **params) -> str:
    with django_assert_max_num_queries(bound):
        response = client.get("/channels/health/", params)
    assert response.status_code == 200
    return response.content.decode()


def test_the_health_page_costs_the_same_queries_with_many_lines_and_alerts(cast, django_assert_max_num_queries):
    support = client_for(cast.support)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    today = timezone.localdate()
    first = SendingNumberFactory()
    NumberDay.objects.create(number=first, day=today, sent=40, received=10)
    _alert(first, level="warn", ratio=4.0)
    with CaptureQueriesContext(connection) as few:
        support.get("/channels/health/")
    # One more query once the open alerts outnumber those shown: how many there are.
    lines = SendingNumberFactory.create_batch(45)
    NumberDay.objects.bulk_create([NumberDay(number=line, day=today - timedelta(days=back), sent=40, received=10)
                                   for line in lines for back in range(14)])
    RatioAlert.objects.bulk_create([RatioAlert(number=line, day=today - timedelta(days=back), level="warn", ratio=4.0,
                                               sent=40, received=10, threshold=2.0)
                                    for line in lines for back in range(3)])
    html = _health_queries(support, django_assert_max_num_queries, len(few.captured_queries) + 1)
    assert html.count('name="note"') == selectors.OPEN_ALERTS_LIMIT  # the first 50 of 136
    assert "(136, the first 50 shown)" in html
    table = html.split('id="line-day-table"')[1].split("</table>")[0]
    assert table.count("<tr data-number=") == 20  # one page of lines
    page3 = _health_queries(support, django_assert_max_num_queries, len(few.captured_queries) + 1, lines=3)
    assert page3.split('id="line-day-table"')[1].split("</table>")[0].count("<tr data-number=") == 6
    assert "Lines 41–46 of 46" in page3


@override_settings(LINDY_BASE_URL="https://lindy.example.com")
def test_alert_emails_carry_an_absolute_link_to_the_alert(cast, queued):
    alert = _alert(SendingNumberFactory(phone="+13125550105", label="Line 5 (CHI)"))
    assert services.ratio_alert_notify(alert_id=alert.pk)["email"]
    message = mail.outbox[0]
    assert "Line 5 · CHI" in message.subject
    assert f"https://lindy.example.com/channels/health/#alert-{alert.pk}" in message.body
    assert "Next step:" in message.body


def test_the_api_acknowledges_with_a_note_or_without_a_body(cast, api_for):
    line = SendingNumberFactory(phone="+13125550105", label="Line 5 (CHI)")
    first, second = _alert(line), _alert(line, back=1)
    api = api_for(cast.support)
    assert api_for(cast.member).post(f"/api/channels/alerts/{first.pk}/acknowledge", {"note": "x"}).status_code == 404
    assert api.post(f"/api/channels/alerts/{first.pk}/acknowledge", {"note": "z" * 501}).status_code == 422
    answer = api.post(f"/api/channels/alerts/{first.pk}/acknowledge", {"note": "Paused it"})
    assert answer.status_code == 200
    assert (answer.json()["line"], answer.json()["acknowledge_note"]) == ("Line 5 · CHI", "Paused it")
    bare = api.post(f"/api/channels/alerts/{second.pk}/acknowledge", raw="")  # an empty JSON body
    assert bare.status_code == 200 and bare.json()["acknowledge_note"] == ""
    second.refresh_from_db()
    assert second.acknowledged_by == cast.support
