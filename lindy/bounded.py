"""Numbers and names read from headers and query strings, bounded before anything uses them.

A header or a query string is input like a body: `X-Slack-Retry-Num: 2147483648` once overflowed
an integer column (a 500). Two policies:
- `clamped_int` for what a provider sends and cannot be answered with an error (Slack retries a
  delivery it did not get a 2xx for): out of range is pulled to the nearest bound, garbage is the
  default;
- `query_int` / `query_choice` for people and API clients: out of range or unknown is
  `BadParameter`, which `lindy.middleware.bad_parameters` answers 400 naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

# The largest value a 32-bit integer column holds (PostgreSQL integer, Django IntegerField).
INT32_MAX = 2_147_483_647
_DIGITS = re.compile(r"[0-9]{1,30}")  # ASCII only: int() also reads "١٢" and "1_000"


class BadParameter(ValueError):
    """A query parameter out of its range or set; answered 400."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name


def clamped_int(raw: str | None, *, low: int, high: int, default: int) -> int:
    """`raw` as ASCII digits, pulled into low..high; anything else is `default`."""
    text = (raw or "").strip()
    if not _DIGITS.fullmatch(text):
        return default
    return max(low, min(int(text), high))


def clamped_choice(raw: str | None, *, allowed: Collection[str], other: str) -> str:
    """`raw` if it is one of `allowed`, else `other` (a provider's enum we do not know yet)."""
    return raw if raw is not None and raw in allowed else other


def query_int(params: Mapping[str, str], name: str, *, low: int, high: int, default: int) -> int:
    """The integer query parameter `name` (absent or empty: `default`); out of range is BadParameter."""
    raw = (params.get(name) or "").strip()
    if not raw:
        return default
    if not re.fullmatch(r"-?[0-9]{1,30}", raw):
        raise BadParameter(name, f"must be a whole number from {low} to {high}.")
    value = int(raw)
    if not low <= value <= high:
        raise BadParameter(name, f"must be from {low} to {high}, not {value}.")
    return value


def query_choice(params: Mapping[str, str], name: str, *, allowed: Collection[str], default: str) -> str:
    """The query parameter `name`, one of `allowed` (absent or empty: `default`); else BadParameter."""
    raw = params.get(name) or ""
    if not raw:
        return default
    if raw not in allowed:
        raise BadParameter(name, f"must be one of {', '.join(sorted(allowed))}.")
    return raw
