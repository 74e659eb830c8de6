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
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) if compact else _indented(payload)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<{tag}>\n{text}\n</{tag}>"


_string = json.encoder.encode_basestring  # the C function json.dumps(ensure_ascii=False) uses
_INFINITY = float("inf")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


class _Unsupported(Exception):
    pass


def _indented(payload: object) -> str:
    """json.dumps(payload, ensure_ascii=False, indent=1), character for character, several times
    faster: with an indent the standard library leaves its C encoder for a generator per level,
    which was a validator request's largest cost (hundreds of memory lines). What this does not
    know (a type json would refuse, a circular structure) goes to json.dumps, to fail the same way."""
    parts: list[str] = []
    add = parts.append

    def value(item: object, level: int) -> None:
        if isinstance(item, str):
            add(_string(item))
        elif item is None:
            add("null")
        elif item is True:
            add("true")
        elif item is False:
            add("false")
        elif isinstance(item, int):
            add(int.__repr__(item))
        elif isinstance(item, float):
            add(_float(item))
        elif isinstance(item, list | tuple):
            if not item:
                add("[]")
                return
            if level > 500:
                raise _Unsupported
            inner = "\n" + " " * (level + 1)
            add("[" + inner)
            for n, element in enumerate(item):
                if n:
                    add("," + inner)
                value(element, level + 1)
            add("\n" + " " * level + "]")
        elif isinstance(item, dict):
            if not item:
                add("{}")
                return
            if level > 500:
                raise _Unsupported
            inner = "\n" + " " * (level + 1)
            add("{" + inner)
            for n, (key, element) in enumerate(item.items()):
                if n:
                    add("," + inner)
                add(_string(_key(key)) + ": ")
                value(element, level + 1)
            add("\n" + " " * level + "}")
        else:
            raise _Unsupported

    try:
        value(payload, 0)
    except _Unsupported:
        return json.dumps(payload, ensure_ascii=False, indent=1)
    return "".join(parts)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise _Unsupported
