"""A Gmail message payload (messages.get format=full|metadata): its headers and its text."""

from __future__ import annotations

import base64
import html
import re

_TAGS = re.compile(r"<[^>]+>")


def _decode(data: str) -> str:
    padded = data + "=" * (-len(data) % 4)
    return base64.urlsafe_b64decode(padded.encode()).decode("utf-8", errors="replace")


def body_text(payload: dict) -> str:
    """The text/plain part, else text/html stripped of tags."""
    plain, rich = [], []

    def walk(part: dict) -> None:
        mime = part.get("mimeType", "")
        data = (part.get("body") or {}).get("data")
        if data and mime == "text/plain":
            plain.append(_decode(data))
        elif data and mime == "text/html":
            rich.append(html.unescape(_TAGS.sub(" ", _decode(data))))
        for child in part.get("parts") or []:
            walk(child)

    walk(payload)
    text = "\n".join(plain) if plain else "\n".join(rich)
    return re.sub(r"[ \t]+", " ", text).strip()


def headers_of(payload: dict) -> dict[str, str]:
    return {h.get("name", "").lower(): h.get("value", "") for h in payload.get("headers") or []}
