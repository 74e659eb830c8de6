"""Photos as the model reads them: type-checked from their bytes (PNG, JPEG, GIF, WebP only),
size-limited, and the user's recent ones found in one query."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from channels_app import images, selectors
from channels_app.models import InboundAttachment, InboundMessage
from tests.channels_app.factories import TextingProfileFactory

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels"
JPEG = b"\xff\xd8\xff\xe0" + b"pixels"
GIF = b"GIF89a" + b"pixels"
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"pixels"


@pytest.fixture
def media_root(tmp_path):
    with override_settings(CHANNELS_MEDIA_ROOT=tmp_path):
        yield tmp_path


@pytest.fixture
def profile(cast):
    return TextingProfileFactory(user=cast.member, phone="+16505550001")


_n = iter(range(1, 10_000))


def photo(profile, root, data: bytes, *, mime="image/jpeg", name="p.jpg", ago=timedelta(0)) -> InboundAttachment:
    n = next(_n)
    message = InboundMessage.objects.create(channel="imessage", provider_id=f"evt-{n}", from_phone=profile.phone,
                                            profile=profile, received_at=timezone.now() - ago)
    (root / f"{n}-{name}").write_bytes(data)
    return InboundAttachment.objects.create(message=message, filename=name, mime_type=mime, size_bytes=len(data),
                                            source_url="http://127.0.0.1:9/x", stored_path=f"{n}-{name}",
                                            stored_at=message.received_at)


@pytest.mark.parametrize(("data", "media_type"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"),
                                                  (WEBP, "image/webp")])
def test_the_four_types_the_model_reads_become_image_blocks(profile, media_root, data, media_type):
    # Declared as JPEG whatever it is: the bytes decide.
    shown = images.photo_of(photo(profile, media_root, data))
    assert shown.block == {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                                        "data": base64.b64encode(data).decode()}}
    assert shown.label.endswith(": p.jpg]")


def test_a_file_that_only_claims_to_be_an_image_is_named_not_shown(profile, media_root):
    shown = images.photo_of(photo(profile, media_root, b"<html>not a photo</html>"))
    assert shown.block is None and "not a PNG, JPEG, GIF or WebP" in shown.label
    tiff = images.photo_of(photo(profile, media_root, b"II*\x00tiff", mime="image/tiff", name="scan.tiff"))
    assert tiff.block is None


def test_a_photo_over_the_limit_is_named_not_read(profile, media_root, monkeypatch):
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 8)
    shown = images.photo_of(photo(profile, media_root, PNG))
    assert shown.block is None and "over the 5 MB limit" in shown.label


def test_a_photo_never_copied_is_named_not_shown(profile, media_root):
    attachment = photo(profile, media_root, PNG)
    InboundAttachment.objects.filter(pk=attachment.pk).update(stored_at=None)
    attachment.refresh_from_db()
    assert "never copied" in images.photo_of(attachment).label


def test_recent_photos_are_the_users_newest_within_the_window_in_one_query(
    cast, profile, media_root, django_assert_max_num_queries,
):
    old = photo(profile, media_root, PNG, ago=timedelta(days=30))
    kept = [photo(profile, media_root, PNG, ago=timedelta(days=d)) for d in (5, 3, 2, 1)]
    other = TextingProfileFactory(user=cast.admin, phone="+16505550002")
    photo(other, media_root, PNG)
    with django_assert_max_num_queries(1):
        shown = selectors.recent_photos(cast.member, days=14, limit=3)
    assert [p.attachment_id for p in shown] == [a.pk for a in kept[1:]]  # oldest first, newest three
    assert old.pk not in [p.attachment_id for p in shown]
