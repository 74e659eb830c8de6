"""A local server that speaks Slack's Web API methods the agent uses (chat.postMessage), for the
real slack_sdk WebClient (`WebClient(token=..., base_url=fake.url + "/api/")`)."""

from __future__ import annotations

import itertools
from urllib.parse import parse_qs

from .http import FakeServer, Recorded, Reply

_ts = itertools.count(1)


def _params(recorded: Recorded) -> dict:
    if recorded.headers.get("content-type", "").startswith("application/json"):
        return recorded.json or {}
    return {k: v[0] for k, v in parse_qs(recorded.body.decode()).items()}


class FakeSlack(FakeServer):
    BOT_TOKEN = "xoxb-test-token"
    CHANNELS = {"#launch": "C0LAUNCH", "#general": "C0GENERAL"}

    def __init__(self):
        super().__init__()
        self.default("POST", "/api/chat.postMessage", self._post_message)

    def _post_message(self, recorded: Recorded) -> Reply:
        if recorded.headers.get("authorization") != f"Bearer {self.BOT_TOKEN}":
            return Reply(200, {"ok": False, "error": "invalid_auth"})
        params = _params(recorded)
        asked = params.get("channel", "")
        channel = self.CHANNELS.get(asked) or (asked if asked in self.CHANNELS.values() else None)
        if channel is None:
            return Reply(200, {"ok": False, "error": "channel_not_found"})
        ts = f"1700000000.{next(_ts):06d}"
        return Reply(200, {"ok": True, "channel": channel, "ts": ts,
                           "message": {"type": "message", "subtype": "bot_message", "text": params.get("text"),
                                       "ts": ts, "bot_id": "B0LINDY"}})

    @property
    def posts(self) -> list[dict]:
        return [_params(r) for r in self.requests_to("POST", "/api/chat.postMessage")]

    def settings(self) -> dict:
        return {"SLACK_API_BASE_URL": self.url + "/api/"}

    def install(self, team, channels=("#launch", "#general", "#secret-room")):
        """The team installed Slack and added the assistant to these channels. (#secret-room is
        registered here but unknown to this Slack: posting there is refused by Slack.)"""
        from channels_app.models import SlackChannel, SlackInstallation

        installation = SlackInstallation.objects.create(
            team=team, client_id="123.456", slack_team_id="T0ACME", slack_team_name="Acme", bot_token=self.BOT_TOKEN,
            bot_user_id="U0LINDY", bot_id="B0LINDY",
        )
        for name in channels:
            SlackChannel.objects.create(
                team=team, installation=installation, slack_team_id="T0ACME", name=name.lstrip("#"),
                channel_id=self.CHANNELS.get(name, "C0" + name.lstrip("#").upper().replace("-", "")),
                is_private=False, active=True,
            )
        return installation



