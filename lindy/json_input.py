"""Bounded JSON in: every JSON body the product reads is checked for size and nesting depth
BEFORE it is parsed, here, in one place (the API's parser, the JSON-body middleware and the
webhooks all call it).

json.loads recurses once per nesting level: a body of 200,000 `[` (signed, for a webhook) ends in
a RecursionError, a 500. The depth is counted by a cheap pre-scan instead: strings are cut out
(brackets inside them don't nest anything), the remaining bytes are reduced to brackets, and the
running depth is summed in C (itertools.accumulate), with no per-character Python loop.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from django.conf import settings


class BodyRefused(ValueError):
    status = 400


class BodyTooLarge(BodyRefused):
    status = 413


class BodyTooDeep(BodyRefused):
    status = 400


class BodyHasNul(BodyRefused):
    status = 400


# A JSON string: a quote, then runs of plain bytes or backslash escapes, then a quote. Written
# "unrolled" so no input makes the regex backtrack more than linearly.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# An escaped NUL (\u0000) that is an escape: preceded by an even number of backslashes. PostgreSQL
# text cannot hold NUL, so a string carrying one would end in a database error, a 500.
_ESCAPED_NUL = re.compile(rb"(?:^|[^\\])(?:\\\\)*\\u0000")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_DELTA = [0] * 256
for _open in b"[{":
    _DELTA[_open] = 1
for _close in b"]}":
    _DELTA[_close] = -1


def max_bytes() -> int:
    return settings.JSON_BODY_MAX_BYTES


def max_depth() -> int:
    return settings.JSON_MAX_DEPTH


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in `raw`, counting brackets outside strings."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return max(accumulate(map(_DELTA.__getitem__, brackets)))


def check(raw: bytes | str) -> None:
    """Raise BodyTooLarge (413), BodyTooDeep or BodyHasNul (400) for a body the product won't parse."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > max_bytes():
        raise BodyTooLarge(f"The JSON body is larger than {max_bytes():,} bytes.")
    if nesting_depth(raw) > max_depth():
        raise BodyTooDeep(f"The JSON body nests deeper than {max_depth()} levels.")
    if b"\\u0000" in raw and _ESCAPED_NUL.search(raw):
        raise BodyHasNul("Text in the JSON body contains a NUL character (\\u0000), which cannot be stored.")


def loads(raw: bytes | str) -> Any:
    """json.loads, after check()."""
    check(raw)
    return json.loads(raw)
