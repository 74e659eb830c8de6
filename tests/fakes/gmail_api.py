"""A local server speaking Google's OAuth 2.0 token endpoint, the Gmail API (profile,
messages.list with `q=after:`/`in:sent` and pageToken, messages.get format=full|metadata,
messages.send with raw MIME and threadId, the media upload of messages.send (message/rfc822
bytes, at most 35 MB), messages.get format=raw, modify, trash, threads.get, drafts create, update,
list and get) and the Calendar API v3 (events insert with client ids, get, patch, delete; a
patch or delete with sendUpdates=all is recorded in `notified`, the emails Google would send).

Revoking (`revoke()`) makes every token 401 and every refresh `invalid_grant`. Scripted replies
(FakeServer.script) put a 429 with Retry-After or a 500 in front of any path; `fail_after`
makes a path do its work and still answer 500, the unknown outcome a retry must check."""

from __future__ import annotations

import base64
import itertools
import re
import time
from email import message_from_bytes, policy
from email.message import EmailMessage

from tests.fakes.http import Reply
from tests.fakes.routes import PatternFakeServer

READONLY = "https://www.googleapis.com/auth/gmail.readonly"
ACT = ("https://www.googleapis.com/auth/gmail.send https://www.googleapis.com/auth/gmail.compose "
       "https://www.googleapis.com/auth/gmail.modify")
CALENDAR = "https://www.googleapis.com/auth/calendar.events"
_ME = "/gmail/v1/users/me"
_EVENTS = "/calendar/v3/calendars/primary/events"

CLIENT_ID = "gmail-client-id.apps.googleusercontent.com"
CLIENT_SECRET = "gmail-client-secret"
EMAIL = "umar@gmail.test"
MAX_UPLOAD_BYTES = 35 * 1024 * 1024  # messages.send: "Maximum file size: 35MB"


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


class FakeGmail(PatternFakeServer):
    def __init__(self, page_size: int = 2):
        super().__init__()
        self.page_size = page_size
        self.messages: dict[str, dict] = {}
        self.valid_tokens: set[str] = set()
        self.refresh_tokens: set[str] = {"refresh-1"}
        # Authorization code -> the scopes the user ticked on the consent screen for it.
        self.codes: dict[str, str] = {"good-code": READONLY}
        self.granted: set[str] = set()  # include_granted_scopes: grants add up
        self.raw: dict[str, EmailMessage] = {}  # message id -> the MIME Gmail received (sends and drafts)
        self.raw_bytes: dict[str, bytes] = {}  # message id -> its RFC 822 bytes, for format=raw
        self.drafts: dict[str, str] = {}  # draft id -> message id
        self.events: dict[str, dict] = {}
        self.notified: list[tuple[str, str, list[str]]] = []  # (event id, "updated"/"cancelled", attendees)
        self.fail_after: dict[str, int] = {}  # "METHOD path" -> times to do the work and still answer 500
        self._tokens = itertools.count(1)
        self._ids = itertools.count(0x18c0000000000001)
        self.route("POST", r"/token", self._token)
        self.route("GET", _ME + r"/profile", self._profile)
        self.route("GET", _ME + r"/messages", self._list)
        self.route("POST", _ME + r"/messages/send", self._authed_route(self._send))
        self.route("POST", "/upload" + _ME + r"/messages/send", self._authed_route(self._upload_send))
        self.route("GET", _ME + r"/messages/([\w-]+)", self._get)
        self.route("POST", _ME + r"/messages/([\w-]+)/modify", self._authed_route(self._modify))
        self.route("POST", _ME + r"/messages/([\w-]+)/trash", self._authed_route(self._trash))
        self.route("GET", _ME + r"/threads/([\w-]+)", self._authed_route(self._thread_get))
        self.route("POST", _ME + r"/drafts", self._authed_route(self._draft_create))
        self.route("GET", _ME + r"/drafts", self._authed_route(self._draft_list))
        self.route("GET", _ME + r"/drafts/([\w-]+)", self._authed_route(self._draft_get))
        self.route("PUT", _ME + r"/drafts/([\w-]+)", self._authed_route(self._draft_update))
        self.route("POST", _EVENTS, self._authed_route(self._event_insert))
        self.route("GET", _EVENTS + r"/([\w-]+)", self._authed_route(self._event_get))
        self.route("PATCH", _EVENTS + r"/([\w-]+)", self._authed_route(self._event_patch))
        self.route("DELETE", _EVENTS + r"/([\w-]+)", self._authed_route(self._event_delete))

    def settings(self) -> dict:
        return {"GMAIL_CLIENT_ID": CLIENT_ID, "GMAIL_CLIENT_SECRET": CLIENT_SECRET, "GMAIL_API_BASE_URL": self.url,
                "GOOGLE_OAUTH_TOKEN_URL": self.url + "/token", "GOOGLE_CALENDAR_API_BASE_URL": self.url,
                "GOOGLE_OAUTH_AUTHORIZE_URL": self.url + "/o/oauth2/v2/auth"}

    def revoke(self) -> None:
        """The user removed the app's access in their Google account."""
        self.valid_tokens.clear()
        self.refresh_tokens.clear()

    def sent(self) -> list[dict]:
        return [m for m in self.messages.values() if "SENT" in m["labelIds"]]

    def _new_id(self) -> str:
        return f"{next(self._ids):x}"

    def add_message(self, message_id: str, *, internal_ms: int, subject: str, body: str, sender: str = "jane@initech.test",
                    html: bool = False, labels: tuple[str, ...] = ("INBOX",), headers: dict | None = None) -> None:
        part = {"mimeType": "text/html" if html else "text/plain", "body": {"size": len(body), "data": b64(body)}}
        self.messages[message_id] = {
            "id": message_id, "threadId": f"t{message_id}", "labelIds": list(labels), "snippet": body[:50],
            "internalDate": str(internal_ms), "sizeEstimate": 500,
            "payload": {"mimeType": "multipart/alternative", "headers": [
                {"name": "From", "value": sender}, {"name": "To", "value": EMAIL}, {"name": "Subject", "value": subject},
                *({"name": k, "value": v} for k, v in (headers or {}).items()),
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
            self.granted |= set(self.codes.pop(form["code"]).split())
            self.refresh_tokens.add("refresh-1")
            return Reply(200, {"access_token": self.issue_token(), "expires_in": 3599, "refresh_token": "refresh-1",
                               "scope": " ".join(sorted(self.granted)), "token_type": "Bearer"})
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return Reply(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
            return Reply(200, {"access_token": self.issue_token(), "expires_in": 3599, "token_type": "Bearer",
                               "scope": " ".join(sorted(self.granted)) or READONLY})
        return Reply(400, {"error": "unsupported_grant_type"})

    def _profile(self, recorded, match):
        if not self._authed(recorded):
            return self._unauthorized()
        return Reply(200, {"emailAddress": EMAIL, "messagesTotal": len(self.messages), "historyId": "1"})

    def _list(self, recorded, match):
        if not self._authed(recorded):
            return self._unauthorized()
        query = recorded.query.get("q", "")
        after = re.search(r"after:(\d+)", query)
        after_s = int(after.group(1)) if after else 0
        # Newest first, like Gmail; `after:` compares seconds. Drafts and trash are not listed.
        found = sorted((m for m in self.messages.values() if int(m["internalDate"]) // 1000 > after_s - 1
                        and not {"DRAFT", "TRASH"} & set(m["labelIds"])
                        and ("in:sent" not in query or "SENT" in m["labelIds"])),
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

    def add_raw(self, message_id: str, data: bytes, *, internal_ms: int = 1_700_000_000_000) -> None:
        """An inbox message given as its RFC 822 bytes (attachments and all)."""
        mime = message_from_bytes(data, policy=policy.default)
        text = mime.get_body(preferencelist=("plain",))
        body = text.get_content() if text is not None else ""
        self.raw[message_id], self.raw_bytes[message_id] = mime, data  # type: ignore[assignment]
        self.messages[message_id] = {
            "id": message_id, "threadId": f"t{message_id}", "labelIds": ["INBOX"], "snippet": body[:50],
            "internalDate": str(internal_ms), "sizeEstimate": len(data),
            "payload": {"mimeType": mime.get_content_type(), "headers": [{"name": k, "value": str(v)}
                                                                        for k, v in mime.items()],
                        "body": {"size": len(body), "data": b64(body)}},
        }

    def _get(self, recorded, match):
        if not self._authed(recorded):
            return self._unauthorized()
        message = self.messages.get(match.group(1))
        if message is None:
            return Reply(404, {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}})
        if recorded.query.get("format") == "raw":
            data = self.raw_bytes.get(message["id"]) or self._rebuilt(message)
            return Reply(200, {k: message[k] for k in ("id", "threadId", "labelIds", "snippet", "sizeEstimate")}
                         | {"raw": base64.urlsafe_b64encode(data).decode()})
        return Reply(200, message)

    @staticmethod
    def _rebuilt(message: dict) -> bytes:
        """RFC 822 bytes for a message added without them (add_message): its headers and text."""
        mime = EmailMessage()
        for header in message["payload"]["headers"]:
            mime[header["name"]] = header["value"]
        parts = message["payload"].get("parts") or [message["payload"]]
        data = parts[0]["body"].get("data", "")
        mime.set_content(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode())
        return mime.as_bytes()

    # --- Acting: send, modify, trash, threads, drafts --------------------------------------------

    def _authed_route(self, handler):
        def route(recorded, match):
            if not self._authed(recorded):
                return self._unauthorized()
            reply = handler(recorded, match)
            key = f"{recorded.method} {recorded.path}"
            if reply.status < 300 and self.fail_after.get(key):
                self.fail_after[key] -= 1
                return Reply(500, {"error": {"code": 500, "message": "Backend Error", "status": "INTERNAL"}})
            return reply
        return route

    @staticmethod
    def _not_found() -> Reply:
        return Reply(404, {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}})

    def _store(self, raw_b64: str, labels: list[str], thread_id: str | None, data: bytes | None = None) -> dict | Reply:
        try:
            if data is None:
                data = base64.urlsafe_b64decode(raw_b64 + "=" * (-len(raw_b64) % 4))
            mime = message_from_bytes(data, policy=policy.default)
        except (ValueError, TypeError):
            return Reply(400, {"error": {"code": 400, "message": "Invalid raw message", "status": "INVALID_ARGUMENT"}})
        if "SENT" in labels and not any(mime.get(h) for h in ("To", "Cc", "Bcc")):
            return Reply(400, {"error": {"code": 400, "message": "Invalid To header", "status": "INVALID_ARGUMENT"}})
        if thread_id and not any(m["threadId"] == thread_id for m in self.messages.values()):
            return self._not_found()
        message_id = self._new_id()
        # Gmail strips Bcc from what it stores for the sender as from what it delivers.
        headers = [{"name": k, "value": str(v)} for k, v in mime.items() if k.lower() != "bcc"]
        if not mime.get("From"):
            headers.insert(0, {"name": "From", "value": EMAIL})
        text = mime.get_body(preferencelist=("plain",))
        body = text.get_content() if text is not None else ""
        self.raw[message_id], self.raw_bytes[message_id] = mime, data  # type: ignore[assignment]
        self.messages[message_id] = {
            "id": message_id, "threadId": thread_id or message_id, "labelIds": labels, "snippet": body[:50],
            "internalDate": str(int(time.time() * 1000)), "sizeEstimate": len(raw_b64),
            "payload": {"mimeType": "text/plain", "headers": headers, "body": {"size": len(body), "data": b64(body)}},
        }
        return self.messages[message_id]

    def _send(self, recorded, match):
        body = recorded.json or {}
        stored = self._store(body.get("raw", ""), ["SENT"], body.get("threadId"))
        if isinstance(stored, Reply):
            return stored
        return Reply(200, {"id": stored["id"], "threadId": stored["threadId"], "labelIds": stored["labelIds"]})

    def _upload_send(self, recorded, match):
        """messages.send through the media upload URI: the body is the message itself."""
        if recorded.query.get("uploadType") != "media" or \
                recorded.headers.get("content-type", "").split(";")[0].strip() != "message/rfc822":
            return Reply(400, {"error": {"code": 400, "message": "Media type not accepted", "status": "INVALID_ARGUMENT"}})
        if len(recorded.body) > MAX_UPLOAD_BYTES:
            return Reply(413, {"error": {"code": 413, "message": "Request Entity Too Large"}})
        stored = self._store("", ["SENT"], None, data=recorded.body)
        if isinstance(stored, Reply):
            return stored
        return Reply(200, {"id": stored["id"], "threadId": stored["threadId"], "labelIds": stored["labelIds"]})

    def _modify(self, recorded, match):
        message = self.messages.get(match.group(1))
        if message is None:
            return self._not_found()
        body = recorded.json or {}
        labels = [label for label in message["labelIds"] if label not in (body.get("removeLabelIds") or [])]
        message["labelIds"] = labels + [x for x in body.get("addLabelIds") or [] if x not in labels]
        return Reply(200, {"id": message["id"], "threadId": message["threadId"], "labelIds": message["labelIds"]})

    def _trash(self, recorded, match):
        message = self.messages.get(match.group(1))
        if message is None:
            return self._not_found()
        message["labelIds"] = [x for x in message["labelIds"] if x != "INBOX"] + ["TRASH"]
        return Reply(200, {"id": message["id"], "threadId": message["threadId"], "labelIds": message["labelIds"]})

    def _thread_get(self, recorded, match):
        found = sorted((m for m in self.messages.values() if m["threadId"] == match.group(1)),
                       key=lambda m: int(m["internalDate"]))
        if not found:
            return self._not_found()
        return Reply(200, {"id": match.group(1), "messages": found})

    def _draft(self, draft_id: str) -> dict:
        message = self.messages[self.drafts[draft_id]]
        return {"id": draft_id, "message": message}

    def _draft_create(self, recorded, match):
        body = (recorded.json or {}).get("message") or {}
        stored = self._store(body.get("raw", ""), ["DRAFT"], body.get("threadId"))
        if isinstance(stored, Reply):
            return stored
        draft_id = f"r{stored['id']}"
        self.drafts[draft_id] = stored["id"]
        return Reply(200, {"id": draft_id, "message": {"id": stored["id"], "threadId": stored["threadId"],
                                                      "labelIds": ["DRAFT"]}})

    def _draft_update(self, recorded, match):
        draft_id = match.group(1)
        if draft_id not in self.drafts:
            return self._not_found()
        body = (recorded.json or {}).get("message") or {}
        stored = self._store(body.get("raw", ""), ["DRAFT"], body.get("threadId"))
        if isinstance(stored, Reply):
            return stored
        self.messages.pop(self.drafts[draft_id], None)
        self.drafts[draft_id] = stored["id"]
        return Reply(200, {"id": draft_id, "message": {"id": stored["id"], "threadId": stored["threadId"],
                                                      "labelIds": ["DRAFT"]}})

    def _draft_list(self, recorded, match):
        drafts = [{"id": d, "message": {"id": m, "threadId": self.messages[m]["threadId"]}}
                  for d, m in reversed(self.drafts.items())]
        return Reply(200, {"drafts": drafts, "resultSizeEstimate": len(drafts)} if drafts else {"resultSizeEstimate": 0})

    def _draft_get(self, recorded, match):
        if match.group(1) not in self.drafts:
            return self._not_found()
        return Reply(200, self._draft(match.group(1)))

    # --- Calendar ------------------------------------------------------------------------------

    def _event_insert(self, recorded, match):
        body = recorded.json or {}
        event_id = body.get("id") or self._new_id()
        if not re.fullmatch(r"[a-v0-9]{5,1024}", event_id):
            return Reply(400, {"error": {"code": 400, "message": "Invalid resource id value.",
                                         "errors": [{"reason": "invalid"}]}})
        if event_id in self.events:
            return Reply(409, {"error": {"code": 409, "message": "The requested identifier already exists.",
                                         "errors": [{"reason": "duplicate"}]}})
        if not body.get("start") or not body.get("end"):
            return Reply(400, {"error": {"code": 400, "message": "Missing time.", "errors": [{"reason": "required"}]}})
        self.events[event_id] = {**body, "id": event_id, "status": "confirmed",
                                 "htmlLink": f"https://www.google.com/calendar/event?eid={event_id}",
                                 "sendUpdates": recorded.query.get("sendUpdates", "")}
        return Reply(200, self.events[event_id])

    def _event_get(self, recorded, match):
        event = self.events.get(match.group(1))
        return Reply(200, event) if event else self._not_found()

    def _event_patch(self, recorded, match):
        event = self.events.get(match.group(1))
        if event is None or event["status"] == "cancelled":
            return self._not_found()
        event.update(recorded.json or {})
        self._notify(recorded, event, "updated")
        return Reply(200, event)

    def _notify(self, recorded, event: dict, kind: str) -> None:
        if recorded.query.get("sendUpdates") == "all":
            self.notified.append((event["id"], kind, [a.get("email", "") for a in event.get("attendees") or []]))

    def _event_delete(self, recorded, match):
        event = self.events.get(match.group(1))
        if event is None:
            return self._not_found()
        if event["status"] == "cancelled":
            return Reply(410, {"error": {"code": 410, "message": "Resource has been deleted",
                                         "errors": [{"reason": "deleted"}]}})
        event["status"] = "cancelled"
        self._notify(recorded, event, "cancelled")
        return Reply(204, b"")
