"""What a person reads on a page, and the words that are for machines, not people (issue 35 part 2):
route ids, environment variable names, Python reprs, and long numbers printed without grouping.

`visible_text` drops what is not read: the head, scripts, styles, comments and every tag with its
attributes (a `title` tooltip is where an id belongs). `problems` names each finding.
"""

from __future__ import annotations

import html as html_lib
import re

_INVISIBLE = re.compile(r"<(head|script|style|template)\b.*?</\1>|<!--.*?-->", re.S | re.I)
# The narrow allow-list: an element marked data-id-subject shows an id because the id is what it is
# about (the environment variable a superuser sets for a provider's key, a command line for staff).
_ID_SUBJECT = re.compile(r"<(\w+)\b[^>]*\bdata-id-subject\b[^>]*>.*?</\1>", re.S)
_TAG = re.compile(r"<[^>]+>")
_TEXT_NODE = re.compile(r">([^<]+)<")

ENV_NAME = re.compile(
    r"\b(?:(?:LINDY|ANTHROPIC|SLACK|GMAIL|GOOGLE|TWILIO|LINQ|OPENAI|DATABASE|REDIS|EMAIL|CHANNELS)_[A-Z0-9_]+"
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:KEY|TOKEN|SECRET))\b")
PY_REPR = re.compile(r"\{'|\['")
# 5+ digits standing alone: not the fraction of a decimal, not a phone number (+1312…), not part
# of a path (/runs/12345/), a hash or a date-time token (digits beside letters, '-', ':' or '/').
LONG_NUMBER = re.compile(r"(?<![\w.,+/#:-])\d{5,}(?![\w,/:-]|\.\d)")


def _readable(html: str) -> str:
    return _ID_SUBJECT.sub(" ", _INVISIBLE.sub(" ", html))


def visible_text(html: str) -> str:
    return html_lib.unescape(_TAG.sub(" ", _readable(html)))


def text_nodes(html: str) -> list[str]:
    """Each run of text between two tags, unescaped and stripped (for ids shown as a whole label)."""
    body = _readable(html)
    return [html_lib.unescape(node).strip() for node in _TEXT_NODE.findall(body) if node.strip()]


def problems(html: str, route_ids: set[str]) -> list[str]:
    text = visible_text(html)
    found = [f"environment variable {m}" for m in sorted(set(ENV_NAME.findall(text)))]
    found += [f"Python repr …{text[max(0, m.start() - 30):m.end() + 30].strip()}…" for m in PY_REPR.finditer(text)][:3]
    found += [f"unformatted number {m.group(0)}" for m in LONG_NUMBER.finditer(text)][:5]
    dotted = {r for r in route_ids if "." in r}
    for route in sorted(dotted):
        if re.search(rf"(?<![\w./-]){re.escape(route)}(?![\w/-]|\.\w)", text):
            found.append(f"route id {route}")
    # A one-word route id ("agent", "validator") is an English word too: it is a finding when it
    # stands alone as a label (a table cell, a badge), not in a sentence.
    plain = route_ids - dotted
    found += [f"route id {node}" for node in sorted(set(text_nodes(html)) & plain)]
    return found
