"""Hydration sits beside channels_app and never imports it: the Slack channels switched on for a
memory come through the provider channels_app registers in lindy.seams, as plain values."""

from __future__ import annotations

from pathlib import Path

import pytest

import hydration
from hydration.sources.slack import SlackSource
from lindy import seams
from tests.imports import offending_imports

from .helpers import channel, installation, share, team_fs, user_fs

pytestmark = pytest.mark.django_db

CALLS = []


def only_general(team):
    CALLS.append(("team", team))
    return [seams.SlackMemoryChannel(channel_id="C0GENERAL", name="general", slack_team_id="T1",
                                     installation_id=None, bot_token="")]


def nothing_for(user):
    CALLS.append(("user", user))
    return []


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


def test_the_registered_provider_is_the_one_called(cast, monkeypatch):
    monkeypatch.setattr(seams, "_slack_channels", {})
    seams.register_slack_channels(for_team=only_general, for_user=nothing_for)
    CALLS.clear()
    source = SlackSource()
    assert [c.channel_id for c in source.channels(team_fs(cast.team))] == ["C0GENERAL"]
    assert source.channels(user_fs(cast.member)) == []
    assert CALLS == [("team", cast.team), ("user", cast.member)]
