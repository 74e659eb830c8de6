"""A forward attaches the original as message/rfc822 (fetched with format=raw, its attachments
inside it), goes through messages.send's media upload, happens once across an unknown outcome,
and is refused with its size, before anything is sent, beyond Gmail's 35 MB."""

from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest

from agent.models import OutboxEntry
from agent.tools import gmail
from tests.agent.google_helpers import connect, run
from tests.fakes.gmail_api import EMAIL

pytestmark = pytest.mark.django_db

UPLOAD = "/upload/gmail/v1/users/me/messages/send"
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 40


def original(attachment: bytes = PDF) -> bytes:
    message = EmailMessage(policy=policy.SMTP)
    message["From"] = "Jane Park <jane@initech.test>"
    message["To"] = EMAIL
    message["Subject"] = "Signed contract"
    message["Date"] = "Tue, 14 Nov 2023 22:13:20 +0000"
    message["Message-ID"] = "<contract-1@initech.test>"
    message.set_content("Here is the signed contract — merci!")
    message.add_attachment(attachment, maintype="application", subtype="pdf", filename="contract.pdf")
    return message.as_bytes()


def test_forward_attaches_the_original_with_its_attachments_through_the_upload(cast, google):
    connect(cast.member, google)
    data = original()
    google.add_raw("m1", data)
    result, _ = run(cast, "forward_email", {"message_id": "m1", "to": ["boss@acme.test"], "note": "FYI, signed."})
    assert result.ok and "original attached" in result.content, result.content
    [upload] = google.requests_to("POST", UPLOAD)
    assert upload.query["uploadType"] == "media" and upload.headers["content-type"] == "message/rfc822"
    sent = message_from_bytes(upload.body, policy=policy.default)  # what Gmail received parses
    assert (sent["To"], sent["Subject"]) == ("boss@acme.test", "Fwd: Signed contract")
    assert sent.get_body(preferencelist=("plain",)).get_content().startswith("FYI, signed.")
    [part] = [p for p in sent.iter_attachments() if p.get_content_type() == "message/rfc822"]
    inner = part.get_content()
    assert inner.as_bytes(policy=policy.SMTP) == data  # the original, byte for byte
    [pdf] = inner.iter_attachments()
    assert pdf.get_filename() == "contract.pdf" and pdf.get_content() == PDF
    assert google.requests_to("POST", "/gmail/v1/users/me/messages/send") == []


def test_a_forward_that_answered_500_after_sending_is_found_not_sent_twice(cast, google):
    connect(cast.member, google)
    google.add_raw("m1", original())
    google.fail_after[f"POST {UPLOAD}"] = 1
    result, _ = run(cast, "forward_email", {"message_id": "m1", "to": ["boss@acme.test"]})
    assert result.ok and "found in Gmail" in result.content, result.content
    assert len(google.sent()) == 1 and len(google.requests_to("POST", UPLOAD)) == 1


def test_a_forward_beyond_gmails_limit_is_refused_with_its_size_and_nothing_is_sent(cast, google, monkeypatch):
    assert gmail.MAX_MESSAGE_BYTES == 35 * 1024 * 1024  # messages.send, media upload: "Maximum file size: 35MB"
    connect(cast.member, google)
    data = original(PDF * 8)
    google.add_raw("m1", data)
    monkeypatch.setattr(gmail, "MAX_MESSAGE_BYTES", len(data) + 100)  # the original fits; with the note it does not
    result, _ = run(cast, "forward_email", {"message_id": "m1", "to": ["boss@acme.test"], "note": "x" * 200})
    assert not result.ok and "Gmail sends at most" in result.content and "Nothing was sent" in result.content
    monkeypatch.setattr(gmail, "MAX_MESSAGE_BYTES", len(data) - 1)  # the original alone is too big
    again, _ = run(cast, "forward_email", {"message_id": "m1", "to": ["cfo@acme.test"]})
    assert not again.ok and "MB" in again.content
    assert google.requests_to("POST", UPLOAD) == [] and google.sent() == []
    assert set(OutboxEntry.objects.values_list("status", flat=True)) == {"failed"}
