"""Putting outside text into prompts: the one way every prompt builder fences data.

Email bodies, Slack messages, meeting notes, memory files and task history are data, never
instructions. Each piece goes inside a labelled tag, escaped so that it cannot close that tag
(or any other) and pose as the prompt around it, nor break out of an attribute to forge one.
"""

from __future__ import annotations

import html
import json


def escape_text(text: str) -> str:
    """Text that cannot open or close a tag around it."""
    return html.escape(str(text), quote=False)


def escape_attribute(text: str) -> str:
    """Text that cannot close the attribute it sits in (e.g. a From header "Jane" <j@x>)."""
    return html.escape(str(text), quote=True)


def fence(tag: str, text: str, *, block: bool = False, **attributes: object) -> str:
    """<tag a="...">text</tag>, text and attributes escaped. `block` puts the text on its own
    lines. Attributes whose value is None are left out."""
    attrs = "".join(
        f' {name}="{escape_attribute(str(value))}"' for name, value in attributes.items() if value is not None
    )
    body = escape_text(text)
    return f"<{tag}{attrs}>\n{body}\n</{tag}>" if block else f"<{tag}{attrs}>{body}</{tag}>"


def fence_json(tag: str, payload: object, *, compact: bool = False) -> str:
    """A JSON document inside <tag>: `<`, `>` and `&` are written as JSON escapes, so no string
    in it can close the tag, and json.loads still reads it back unchanged. `compact`: one line."""
    text = (json.dumps(payload, ensure_ascii=False, separators=(",", ":")) if compact
            else json.dumps(payload, ensure_ascii=False, indent=1))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<{tag}>\n{text}\n</{tag}>"
