"""A local server speaking Google's OAuth 2.0 token endpoint and the Gmail API (profile,
messages.list with `q=after:` and pageToken, messages.get format=full)."""

from __future__ import annotations

import base64
import itertools
import re

from tests.fakes.http import Reply
from tests.fakes.routes import PatternFakeServer

CLIENT_ID = "gmail-client-id.apps.googleusercontent.com"
CLIENT_SECRET = "gmail-client-secret"
EMAIL = "umar@gmail.test"


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


class FakeGmail(PatternFakeServer):
    def __init__(self, page_size: int = 2):
        super().__init__()
        self.page_size = page_size
        self.messages: dict[str, dict] = {}
        self.valid_tokens: set[str] = set()
        self.refresh_tokens: set[str] = {"refresh-1"}
        self.codes: set[str] = {"good-code"}
        self._tokens = itertools.count(1)
        self.route("POST", r"/token", self._token)
        self.route("GET", r"/gmail/v1/users/me/profile", self._profile)
        self.route("GET", r"/gmail/v1/users/me/messages", self._list)
        self.route("GET", r"/gmail/v1/users/me/messages/([\w-]+)", self._get)

    def settings(self) -> dict:
        return {"GMAIL_CLIENT_ID": CLIENT_ID, "GMAIL_CLIENT_SECRET": CLIENT_SECRET, "GMAIL_API_BASE_URL": self.url,
                "GOOGLE_OAUTH_TOKEN_URL": self.url + "/token",
                "GOOGLE_OAUTH_AUTHORIZE_URL": self.url + "/o/oauth2/v2/auth"}

    def add_message(self, message_id: str, *, internal_ms: int, subject: str, body: str, sender: str = "jane@initech.test",
                    html: bool = False, labels: tuple[str, ...] = ("INBOX",)) -> None:
        part = {"mimeType": "text/html" if html else "text/plain", "body": {"size": len(body), "data": b64(body)}}
        self.messages[message_id] = {
            "id": message_id, "threadId": f"t{message_id}", "labelIds": list(labels), "snippet": body[:50],
            "internalDate": str(internal_ms), "sizeEstimate": 500,
            "payload": {"mimeType": "multipart/alternative", "headers": [
                {"name": "From", "value": sender}, {"name": "To", "value": EMAIL}, {"name": "Subject", "value": subject},
            ], "body": {"size": 0}, "parts": [part]},
        }

    def issue_token(self) -> str:
        token = f"ya29.access-{next(self._tokens)}"
        self.valid_tokens.add(token)
        return token

    def _authed(self, recorded) -> bool:
        header = recorded.headers.get("authorization", "")
        return header.startswith("Bearer ") and header[7:] in self.valid_tokens

    def _unauthorized(self) -> Reply:
        return Reply(401, {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                                     "status": "UNAUTHENTICATED"}})

    def _token(self, recorded, match):
        form = recorded.form
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return Reply(401, {"error": "invalid_client", "error_description": "The OAuth client was not found."})
        if form.get("grant_type") == "authorization_code":
            if form.get("code") not in self.codes:
                return Reply(400, {"error": "invalid_grant", "error_description": "Malformed auth code."})
            self.codes.discard(form["code"])
            return Reply(200, {"access_token": self.issue_token(), "expires_in": 3599, "refresh_token": "refresh-1",
                               "scope": "https://www.googleapis.com/auth/gmail.readonly", "token_type": "Bearer"})
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return Reply(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
            return Reply(200, {"access_token": self.issue_token(), "expires_in": 3599, "token_type": "Bearer",
                               "scope": "https://www.googleapis.com/auth/gmail.readonly"})
        return Reply(400, {"error": "unsupported_grant_type"})

    def _profile(self, recorded, match):
        if not self._authed(recorded):
            return self._unauthorized()
        return Reply(200, {"emailAddress": EMAIL, "messagesTotal": len(self.messages), "historyId": "1"})

    def _list(self, recorded, match):
        if not self._authed(recorded):
            return self._unauthorized()
        after = re.search(r"after:(\d+)", recorded.query.get("q", ""))
        after_s = int(after.group(1)) if after else 0
        # Newest first, like Gmail; `after:` compares seconds.
        found = sorted((m for m in self.messages.values() if int(m["internalDate"]) // 1000 > after_s - 1),
                       key=lambda m: -int(m["internalDate"]))
        if after:
            found = [m for m in found if int(m["internalDate"]) / 1000 > after_s]
        start = int(recorded.query.get("pageToken") or 0)
        size = min(int(recorded.query.get("maxResults") or 100), self.page_size)
        page = found[start:start + size]
        body = {"messages": [{"id": m["id"], "threadId": m["threadId"]} for m in page], "resultSizeEstimate": len(found)}
        if start + size < len(found):
            body["nextPageToken"] = str(start + size)
        if not page:
            body.pop("messages")
        return Reply(200, body)

    def _get(self, recorded, match):
        if not self._authed(recorded):
            return self._unauthorized()
        message = self.messages.get(match.group(1))
        if message is None:
            return Reply(404, {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}})
        return Reply(200, message)
