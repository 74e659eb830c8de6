"""Photos users texted, as a model reads them: an Anthropic image content block
({"type": "image", "source": {"type": "base64", "media_type": ..., "data": ...}}) when the file
really is a PNG, JPEG, GIF or WebP (read from its first bytes, not from what the sender
declared) and within the API's per-image limit; otherwise a note saying why it is not shown.
Targets that read no images get the gateway's text note instead (router.gateway.images_as_text).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .models import InboundAttachment

# The Messages API refuses a base64 image over 5 MB.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff(head: bytes) -> str | None:
    """The image type the bytes are, among those the model reads; None for anything else."""
    for signature, media_type in SIGNATURES:
        if head.startswith(signature):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class Photo:
    attachment_id: int
    label: str  # what it is, in words, shown next to it whether or not the model sees it
    block: dict | None  # the image content block, or None when it cannot be given


def photo_of(attachment: InboundAttachment) -> Photo:
    when = attachment.message.received_at.strftime("%Y-%m-%d %H:%M UTC")
    label = f"[photo #{attachment.pk} the user texted on {when}: {attachment.filename or 'image'}"
    if not attachment.stored_at:
        return Photo(attachment.pk, label + " (not shown: it was never copied from the provider)]", None)
    if attachment.size_bytes > MAX_IMAGE_BYTES:
        return Photo(attachment.pk, label + f" (not shown: {attachment.size_bytes} bytes, over the 5 MB limit)]", None)
    path = Path(settings.CHANNELS_MEDIA_ROOT) / attachment.stored_path
    try:
        data = path.read_bytes()
    except OSError:
        return Photo(attachment.pk, label + " (not shown: our copy is missing)]", None)
    media_type = sniff(data[:16])
    if len(data) > MAX_IMAGE_BYTES:
        return Photo(attachment.pk, label + f" (not shown: {len(data)} bytes, over the 5 MB limit)]", None)
    if media_type is None:
        return Photo(attachment.pk, label + " (not shown: not a PNG, JPEG, GIF or WebP image)]", None)
    block = {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                         "data": base64.b64encode(data).decode()}}
    return Photo(attachment.pk, label + "]", block)
