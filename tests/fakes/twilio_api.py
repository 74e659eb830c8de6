"""A local server speaking Twilio's Messages API, and inbound webhooks signed the way Twilio
signs them (base64 HMAC-SHA1 over the URL and the sorted POST parameters)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid

from tests.fakes.http import Reply
from tests.fakes.routes import PatternFakeServer

ACCOUNT_SID = "AC" + "0" * 32
AUTH_TOKEN = "twilio-test-auth-token"


class FakeTwilio(PatternFakeServer):
    def __init__(self):
        super().__init__()
        self.fail_sends = False
        self.route("POST", rf"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json", self._create)

    def settings(self) -> dict:
        return {"TWILIO_ACCOUNT_SID": ACCOUNT_SID, "TWILIO_AUTH_TOKEN": AUTH_TOKEN, "TWILIO_API_BASE_URL": self.url}

    def _create(self, recorded, match):
        expected = "Basic " + base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
        if recorded.headers.get("authorization") != expected:
            return Reply(401, {"code": 20003, "message": "Authenticate", "status": 401})
        if self.fail_sends:
            return Reply(400, {"code": 21211, "message": "The 'To' number is not a valid phone number.", "status": 400})
        form = recorded.form
        sid = "SM" + uuid.uuid4().hex
        return Reply(201, {
            "sid": sid, "account_sid": ACCOUNT_SID, "to": form.get("To"), "from": form.get("From"),
            "body": form.get("Body"), "status": "queued", "direction": "outbound-api", "num_segments": "1",
            "uri": f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/{sid}.json",
        })

    def sends(self) -> list:
        return [r for r in self.requests if r.path.endswith("/Messages.json")]


def signature(url: str, params: dict, token: str = AUTH_TOKEN) -> str:
    data = url + "".join(f"{key}{params[key]}" for key in sorted(params))
    return base64.b64encode(hmac.new(token.encode(), data.encode(), hashlib.sha1).digest()).decode()


def inbound_params(*, sender: str, to: str, body: str, sid: str | None = None) -> dict:
    return {
        "MessageSid": sid or "SM" + uuid.uuid4().hex, "SmsSid": sid or "", "AccountSid": ACCOUNT_SID,
        "From": sender, "To": to, "Body": body, "NumMedia": "0", "NumSegments": "1",
        "FromCountry": "US", "ToCountry": "US", "ApiVersion": "2010-04-01",
    }
