"""The ops page of validator V2: cache hit rate and cost per validation per route target, and the
block-rate alerts, from the product's own records."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from router.models import Target
from validator.models import BlockRateAlert, Decision

pytestmark = pytest.mark.django_db
URL = "/validator/cache/"


def _decision(cast, target, *, read, prompt, cost, mode="shared_prefix", share=0.98, days_ago=0):
    return Decision.objects.create(
        team=cast.team, user=cast.member, tool="send_email", effect="third_party", approved=True,
        status="executed", model_call_id=1, router_target=target, validation_mode=mode, prompt_tokens=prompt,
        cache_read_tokens=read, input_tokens=prompt - read, cost=Decimal(cost), prefix_share=share,
        created_at=timezone.now() - timedelta(days=days_ago),
    )


def _alert(n):
    now = timezone.now()
    return BlockRateAlert.objects.create(
        dimension="tool", key=f"tool_{n}", window_start=now - timedelta(hours=1), window_end=now, blocked=9,
        total=12, baseline_blocked=100, baseline_total=1000, p_value=1e-9, alpha=1e-6, last_anomalous_at=now,
        status="closed" if n else "open",
    )


def test_ops_see_hit_rate_and_cost_per_target(client, cast, django_assert_max_num_queries, settings):
    settings.MODEL_OFFLINE = False
    sonnet = Target.objects.get(name="claude-sonnet-4-6-anthropic")
    _decision(cast, sonnet, read=9000, prompt=10000, cost="0.004")
    _decision(cast, sonnet, read=0, prompt=10000, cost="0.006", mode="separate", share=None, days_ago=2)
    for n in range(25):
        _alert(n)
    client.force_login(cast.superuser)
    with django_assert_max_num_queries(16):
        page = client.get(URL).content.decode()
    assert 'data-target="claude-sonnet-4-6-anthropic"' in page
    assert "45.0 %" in page  # 9,000 of 20,000 prompt tokens read from the cache
    assert "$0.005000" in page  # per validation
    assert "98.0 %" in page  # mean prefix share of the shared validations
    assert "data-offline" not in page
    assert page.count("data-alert=") == 20 and "Page 1 of 2" in page
    second = client.get(URL + "?page=2", HTTP_HX_REQUEST="true").content.decode()
    assert second.count("data-alert=") == 5 and "<h1>" not in second


def test_offline_mode_is_said(client, cast, settings):
    settings.MODEL_OFFLINE = True
    client.force_login(cast.superuser)
    page = client.get(URL + "?days=nope").content.decode()
    assert "data-offline" in page and "No validation was answered by a model" in page


@pytest.mark.parametrize("who", ["admin", "member", "support", "other_admin"])
def test_only_ops_see_it(client, cast, who):
    client.force_login(getattr(cast, who))
    assert client.get(URL).status_code == 404
