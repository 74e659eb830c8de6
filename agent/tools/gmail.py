"""Live Gmail actions with the user's own grant: send, reply (threaded), forward, archive, trash,
and drafts (create or update). MIME is built with the standard library's `email` package.

A forward attaches the original as it is (message/rfc822, fetched with format=raw, so its own
attachments travel inside it) and is sent through messages.send's media upload, whose documented
limit is 35 MB; a bigger forward is refused with its size before anything is sent.

Every action runs through execution.run_once. A sent message and a created draft carry an
`X-Lindy-Execution` header (and a Message-ID) derived from the execution key: after an unknown
outcome, `find` lists the user's recent sent mail (or drafts) and reads that header, so the
message is never sent twice. Archive, trash and a draft update are harmless to repeat.
"""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, parseaddr

from django.conf import settings

from google_workspace import messages as gmail_messages
from google_workspace import oauth
from google_workspace.models import GmailAccount

from .execution import Done, Rejected, token
from .google_api import Session, resume_action, run_action

ADAPTER = "gmail"
HEADER = "X-Lindy-Execution"
FIND_LIMIT = 50  # recent sent messages (or drafts) read when checking for an earlier attempt
# messages.send through the upload URI: "Maximum file size: 35MB, Accepted Media MIME types: message/*".
MAX_MESSAGE_BYTES = 35 * 1024 * 1024
TOOLS = frozenset({"send_email", "reply_to_email", "forward_email", "archive_email", "delete_email", "draft_email"})


def _api(path: str) -> str:
    return f"{settings.GMAIL_API_BASE_URL.rstrip('/')}/gmail/v1/users/me/{path.lstrip('/')}"


def _upload_api(path: str) -> str:
    return f"{settings.GMAIL_API_BASE_URL.rstrip('/')}/upload/gmail/v1/users/me/{path.lstrip('/')}"


def message_link(message_id: str) -> str:
    return f"https://mail.google.com/mail/u/0/#all/{message_id}"


def build_message(*, sender: str, key: str, to: list[str], subject: str, body: str, cc=(), bcc=(),
                  in_reply_to: str = "", references: str = "") -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    if bcc:
        message["Bcc"] = ", ".join(bcc)  # Gmail delivers to Bcc and strips the header
    message["Subject"] = subject
    message["Date"] = formatdate(usegmt=True)
    domain = sender.rpartition("@")[2] or "lindy.invalid"
    message["Message-ID"] = f"<lindy.{token(key)}@{domain}>"
    message[HEADER] = token(key)
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = references or in_reply_to
    message.set_content(body)
    return message


def raw(message: EmailMessage) -> str:
    return base64.urlsafe_b64encode(message.as_bytes()).decode()


class GmailAction(ABC):
    """One Gmail action for one account; subclasses say what `perform` does."""

    adapter = ADAPTER
    replay_safe = False  # can perform run again after an unknown outcome without harm?

    def __init__(self, account: GmailAccount, arguments: dict):
        self.account = account
        self.arguments = arguments
        self.session = Session(account, "Gmail")

    def wait(self, reason: str) -> None:
        self.session.wait(reason)

    def get(self, path: str, what: str, params=None) -> dict:
        return self.session.check(self.session.request("GET", _api(path), params=params, replay_safe=True), what)

    def post(self, path: str, what: str, body: dict, *, method: str = "POST") -> dict:
        response = self.session.request(method, _api(path), json=body, replay_safe=self.replay_safe)
        return self.session.check(response, what)

    def find(self, entry) -> Done | None:
        return None

    @abstractmethod
    def perform(self, entry) -> Done:
        """Do the action once at the provider and say what was done."""

    def _marked(self, message: dict, key: str) -> bool:
        headers = gmail_messages.headers_of(message.get("payload") or {})
        return headers.get(HEADER.lower()) == token(key)

    def find_sent(self, entry) -> Done | None:
        """The message an earlier attempt sent, if Gmail has it: recent sent mail with our header."""
        after = int((entry.created_at - timedelta(minutes=2)).timestamp())
        listing = self.get("messages", "the sent-mail check",
                           {"q": f"in:sent after:{after}", "maxResults": FIND_LIMIT})
        for ref in listing.get("messages") or []:
            message = self.get(f"messages/{ref['id']}", "the sent-mail check",
                               {"format": "metadata", "metadataHeaders": [HEADER, "Message-ID"]})
            if self._marked(message, entry.execution_key):
                return self.sent(message, "sent (found in Gmail after an unconfirmed attempt)")
        return None

    def sent(self, message: dict, summary: str) -> Done:
        return Done(provider_id=message["id"], link=message_link(message["id"]), summary=summary,
                    data={"thread_id": message.get("threadId", "")})

    def send(self, message: EmailMessage, summary: str, thread_id: str = "") -> Done:
        body = {"raw": raw(message)}
        if thread_id:
            body["threadId"] = thread_id
        return self.sent(self.post("messages/send", "sending the email", body), summary)


class SendEmail(GmailAction):
    def find(self, entry):
        return self.find_sent(entry)

    def perform(self, entry):
        a = self.arguments
        message = build_message(sender=self.account.email, key=entry.execution_key, to=a["to"], cc=a.get("cc") or (),
                                bcc=a.get("bcc") or (), subject=a["subject"], body=a["body"])
        return self.send(message, "sent")


def _address(text: str) -> str:
    return parseaddr(text or "")[1].casefold()


class ReplyToEmail(GmailAction):
    """A reply in the thread: threadId on the send, In-Reply-To and References from the last
    message, to whoever wrote it (or, if the user wrote it, to whom they wrote)."""

    def find(self, entry):
        return self.find_sent(entry)

    def perform(self, entry):
        a = self.arguments
        thread = self.get(f"threads/{a['thread_id']}", "the thread",
                          {"format": "metadata",
                           "metadataHeaders": ["From", "To", "Cc", "Reply-To", "Subject", "Message-ID", "References"]})
        messages = thread.get("messages") or []
        if not messages:
            raise Rejected(f"Gmail thread {a['thread_id']} has no messages to reply to.")
        last = gmail_messages.headers_of(messages[-1].get("payload") or {})
        own = _address(self.account.email)
        if _address(last.get("from", "")) == own:
            to = [addr for _, addr in getaddresses([last.get("to", "")]) if addr]
        else:
            to = [parseaddr(last.get("reply-to") or last.get("from", ""))[1]]
        to = [addr for addr in to if addr and addr.casefold() != own]
        if not to:
            raise Rejected(f"Nobody to reply to in Gmail thread {a['thread_id']}.")
        subject = last.get("subject", "")
        if not subject.lower().startswith("re:"):
            subject = f"Re: {subject}".strip()
        message_id = last.get("message-id", "")
        references = " ".join(filter(None, [last.get("references", ""), message_id]))
        message = build_message(sender=self.account.email, key=entry.execution_key, to=to, cc=a.get("cc") or (),
                                subject=subject, body=a["body"], in_reply_to=message_id, references=references)
        return self.send(message, f"replied to {', '.join(to)} in the thread", thread_id=a["thread_id"])


def too_big(size: int) -> Rejected:
    return Rejected(f"The forward with the original and its attachments is {size / 2**20:.1f} MB; Gmail sends at "
                    f"most {MAX_MESSAGE_BYTES // 2**20} MB. Nothing was sent: forward it from Gmail with the large "
                    "attachments as Drive links, or ask for a forward without them.")


class ForwardEmail(GmailAction):
    def find(self, entry):
        return self.find_sent(entry)

    def perform(self, entry):
        a = self.arguments
        original = self.get(f"messages/{a['message_id']}", "the email to forward", {"format": "raw"})
        data = original.get("raw") or ""
        data = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        if len(data) > MAX_MESSAGE_BYTES:
            raise too_big(len(data))
        attached = message_from_bytes(data, policy=policy.SMTP)
        subject = str(attached.get("Subject") or "")
        intro = f"---------- Forwarded message ---------\nFrom: {attached.get('From', '')}\n" \
                f"Date: {attached.get('Date', '')}\nSubject: {subject}\n(attached as the original message)"
        body = f"{a.get('note') or ''}\n\n{intro}".lstrip()
        message = build_message(sender=self.account.email, key=entry.execution_key, to=a["to"],
                                subject=subject if subject.lower().startswith("fwd:") else f"Fwd: {subject}", body=body)
        message.add_attachment(attached, disposition="attachment", filename=f"{subject or 'message'}.eml")
        upload = message.as_bytes(policy=policy.SMTP)
        if len(upload) > MAX_MESSAGE_BYTES:
            raise too_big(len(upload))
        response = self.session.request("POST", _upload_api("messages/send"), params={"uploadType": "media"},
                                        content=upload, content_type="message/rfc822", replay_safe=False)
        sent = self.session.check(response, "sending the email")
        return self.sent(sent, f"forwarded to {', '.join(a['to'])} with the original attached")


class ArchiveEmail(GmailAction):
    replay_safe = True

    def perform(self, entry):
        message = self.post(f"messages/{self.arguments['message_id']}/modify", "archiving the email",
                            {"removeLabelIds": ["INBOX"]})
        return self.sent(message, "archived (out of the inbox, still in All Mail)")


class TrashEmail(GmailAction):
    replay_safe = True

    def perform(self, entry):
        message = self.post(f"messages/{self.arguments['message_id']}/trash", "moving the email to the trash", {})
        return self.sent(message, "moved to the trash (Gmail deletes it after 30 days)")


class SaveDraft(GmailAction):
    """Create a draft, or replace draft `draft_id` (drafts.update) — for the assistant's
    draft_email and for email drafting. A draft in a thread carries the reply headers."""

    def __init__(self, account, arguments):
        super().__init__(account, arguments)
        self.replay_safe = bool(arguments.get("draft_id"))  # an update with the full message repeats harmlessly

    def find(self, entry):
        if self.arguments.get("draft_id"):
            return None
        listing = self.get("drafts", "the drafts check", {"maxResults": FIND_LIMIT})
        for ref in listing.get("drafts") or []:
            draft = self.get(f"drafts/{ref['id']}", "the drafts check", {"format": "metadata"})
            if self._marked(draft.get("message") or {}, entry.execution_key):
                return self.drafted(draft, "draft saved (found in Gmail after an unconfirmed attempt)")
        return None

    def drafted(self, draft: dict, summary: str) -> Done:
        message = draft.get("message") or {}
        return Done(provider_id=draft["id"], link=message_link(message.get("id", "")), summary=summary,
                    data={"draft_id": draft["id"], "message_id": message.get("id", ""),
                          "thread_id": message.get("threadId", "")})

    def perform(self, entry):
        a = self.arguments
        message = build_message(sender=self.account.email, key=entry.execution_key, to=a.get("to") or [],
                                cc=a.get("cc") or (), subject=a.get("subject", ""), body=a.get("body", ""),
                                in_reply_to=a.get("in_reply_to", ""), references=a.get("references", ""))
        body: dict = {"message": {"raw": raw(message)}}
        if a.get("thread_id"):
            body["message"]["threadId"] = a["thread_id"]
        if a.get("draft_id"):
            draft = self.post(f"drafts/{a['draft_id']}", "updating the draft", {"id": a["draft_id"], **body},
                              method="PUT")
            return self.drafted(draft, "draft updated (nothing sent)")
        return self.drafted(self.post("drafts", "saving the draft", body), "draft saved (nothing sent)")


ACTIONS: dict[str, type[GmailAction]] = {
    "send_email": SendEmail, "reply_to_email": ReplyToEmail, "forward_email": ForwardEmail,
    "archive_email": ArchiveEmail, "delete_email": TrashEmail, "draft_email": SaveDraft,
}


def account_for(user) -> GmailAccount | None:
    return GmailAccount.objects.filter(user=user).first()


def live(account: GmailAccount | None) -> bool:
    """Does the user let the assistant act in Gmail? (A revoked grant stays live here: its
    actions fail with "reconnect Gmail" instead of quietly becoming recorded-only.)"""
    return bool(account and account.act_in_gmail and oauth.configured())


def run(ctx, tool: str, arguments: dict, result_cls):
    return run_action(ACTIONS, "Gmail", ctx, tool, arguments, result_cls)


def resume(entry, result_cls, *, last_chance: bool = False):
    return resume_action(ACTIONS, "Gmail", entry, result_cls, last_chance=last_chance)
