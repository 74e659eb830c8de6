"""Hydration sits beside channels_app and never imports it: the Slack channels switched on for a
memory come through callables named in settings."""

from __future__ import annotations

from pathlib import Path

import pytest

import hydration
from hydration.sources.slack import SlackSource
from tests.imports import offending_imports

from .helpers import channel, installation, share, team_fs, user_fs

pytestmark = pytest.mark.django_db

CALLS = []


def only_general(team):
    from channels_app.models import SlackChannel

    CALLS.append(("team", team))
    return SlackChannel.objects.filter(channel_id="C0GENERAL")


def nothing_for(user):
    from channels_app.models import SlackChannel

    CALLS.append(("user", user))
    return SlackChannel.objects.none()


def test_hydration_imports_nothing_from_channels_app():
    root = Path(hydration.__file__).resolve().parent
    assert offending_imports(root, "hydration", "channels_app") == []


def test_the_default_seams_are_the_channels_selectors(cast):
    inst = installation(cast.team)
    channel(cast.team, inst, "C0GENERAL", "general", team_memory=True)
    channel(cast.team, inst, "C0RANDOM", "random")
    secret = channel(cast.team, inst, "C0SECRET", "secret", private=True)
    share(secret, cast.member)
    source = SlackSource()
    assert [c.channel_id for c in source.channels(team_fs(cast.team))] == ["C0GENERAL"]
    assert [c.channel_id for c in source.channels(user_fs(cast.member))] == ["C0SECRET"]


def test_the_seams_named_in_settings_are_the_ones_called(cast, settings):
    inst = installation(cast.team)
    channel(cast.team, inst, "C0GENERAL", "general")  # not switched on: the stand-in returns it anyway
    settings.HYDRATION_SLACK_CHANNELS_FOR_TEAM = f"{__name__}.only_general"
    settings.HYDRATION_SLACK_CHANNELS_FOR_USER = f"{__name__}.nothing_for"
    CALLS.clear()
    source = SlackSource()
    assert [c.channel_id for c in source.channels(team_fs(cast.team))] == ["C0GENERAL"]
    assert source.channels(user_fs(cast.member)) == []
    assert CALLS == [("team", cast.team), ("user", cast.member)]
