"""Every page and every API GET, found rather than listed: pages from the URL resolver, API
reads from the OpenAPI document. A new page is crawled as soon as it is routed.

`fill` maps a path parameter's name (`task_id`, `fs_id`, `path`...) to a value; a pattern with
a parameter `fill` lacks is skipped and returned in `unfilled`, so a crawler can say what it missed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

_CONVERTER = re.compile(r"<(?:(?P<kind>[^>:]+):)?(?P<name>[^>]+)>")
_OPENAPI_PARAM = re.compile(r"{(?P<name>[^}]+)}")
# Not pages of the product: Django's admin (its own permission model), sign-out, machine endpoints
# that answer files or webhooks, and the API (crawled from its OpenAPI document instead).
SKIP = re.compile(r"^(admin/|accounts/logout|api/|static/|media/|slack/|channels/(imessage|sms)/webhook)")


@dataclass
class Found:
    paths: list[tuple[str, str]] = field(default_factory=list)  # (pattern, path)
    unfilled: list[str] = field(default_factory=list)


def _patterns(resolver=None, prefix=""):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                continue
            yield from _patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern)


def page_paths(fill: dict[str, object]) -> Found:
    found = Found()
    for pattern in _patterns():
        if SKIP.match(pattern) or "^" in pattern:
            continue
        names = [m.group("name") for m in _CONVERTER.finditer(pattern)]
        if any(name not in fill for name in names):
            found.unfilled.append(pattern)
            continue
        found.paths.append((pattern, "/" + _CONVERTER.sub(lambda m: str(fill[m.group("name")]), pattern)))
    return found


_SCHEMA: dict = {}


def openapi() -> dict:
    """The OpenAPI document, built once per process (it takes a second)."""
    if not _SCHEMA:
        _SCHEMA.update(Client().get("/api/openapi.json").json())
    return _SCHEMA


def api_get_paths(fill: dict[str, object]) -> Found:
    schema = openapi()
    found = Found()
    for path, operations in schema["paths"].items():
        if "get" not in operations:
            continue
        names = [m.group("name") for m in _OPENAPI_PARAM.finditer(path)]
        if any(name not in fill for name in names):
            found.unfilled.append(path)
            continue
        found.paths.append((path, _OPENAPI_PARAM.sub(lambda m: str(fill[m.group("name")]), path)))
    return found


def api_query_params(path: str) -> list[tuple[str, str]]:
    """(name, type) of each query parameter the OpenAPI document gives a GET of `path`."""
    params = openapi()["paths"][path]["get"].get("parameters", [])
    return [(p["name"], p.get("schema", {}).get("type", "")) for p in params if p.get("in") == "query"]
