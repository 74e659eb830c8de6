"""The channels JSON API: same rules as the pages, one error shape."""

from __future__ import annotations

import pytest
from django.utils import timezone

from channels_app.models import NumberDay, SlackChannelShare
from tests.channels_app.factories import SendingNumberFactory, SlackChannelFactory


@pytest.fixture
def channels(cast):
    public = SlackChannelFactory(team=cast.team, name="general")
    private = SlackChannelFactory(team=cast.team, name="leadership", is_private=True)
    share = SlackChannelShare.objects.create(channel=private, user=cast.member)
    return public, private, share


def test_admin_switches_team_memory(cast, channels, api_for):
    public, private, _ = channels
    api = api_for(cast.admin)
    listing = api.get("/api/channels/slack").json()
    assert {c["name"] for c in listing["team_channels"]} == {"general", "leadership"}
    response = api.post(f"/api/channels/slack/{public.pk}/team-memory", {"enabled": True})
    assert response.status_code == 200 and response.json()["use_for_team_memory"] is True
    refused = api.post(f"/api/channels/slack/{private.pk}/team-memory", {"enabled": True})
    assert refused.status_code == 400 and "Private" in refused.json()["error"]["message"]
    bad = api.post(f"/api/channels/slack/{public.pk}/team-memory", {"enabled": "perhaps"})
    assert bad.status_code == 422 and bad.json()["error"]["details"]
    assert api.post(f"/api/channels/slack/{public.pk}/team-memory", raw="{oops").status_code == 400


def test_others_get_404(cast, channels, api_for):
    public, _, share = channels
    assert api_for(cast.member).post(f"/api/channels/slack/{public.pk}/team-memory", {"enabled": True}).status_code == 404
    assert api_for(cast.other_admin).post(f"/api/channels/slack/{public.pk}/team-memory",
                                          {"enabled": True}).status_code == 404
    assert api_for(cast.admin).post(f"/api/channels/slack/shares/{share.pk}/memory", {"enabled": True}).status_code == 404
    ok = api_for(cast.member).post(f"/api/channels/slack/shares/{share.pk}/memory", {"enabled": True})
    assert ok.status_code == 200 and ok.json()["use_for_memory"] is True


def test_texting_registration(cast, api_for):
    SendingNumberFactory(phone="+14155550100")
    api = api_for(cast.member)
    assert api.get("/api/channels/texting").status_code == 404
    assert api.post("/api/channels/texting", {"phone": "nope"}).status_code == 400
    created = api.post("/api/channels/texting", {"phone": "+1 650 555 0101"}).json()
    assert created == {"phone": "+16505550101", "lindy_number": "+14155550100", "connected": False,
                       "first_texted_at": None}
    assert api_for(cast.support).post("/api/channels/texting", {"phone": "+16505550102"}).status_code == 404


def test_health_api_is_for_support(cast, api_for):
    number = SendingNumberFactory(phone="+13125550105")
    NumberDay.objects.create(number=number, day=timezone.localdate(),
                             sent=50, received=2)
    body = api_for(cast.support).get("/api/channels/health").json()
    assert body["over_threshold_7d"][0]["number"] == "+13125550105"
    assert body["today"][0]["level"] == "critical"
    assert api_for(cast.admin).get("/api/channels/health").status_code == 404
