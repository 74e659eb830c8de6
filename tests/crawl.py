"""Every page and every API GET, found rather than listed: pages from the URL resolver, API
reads from the OpenAPI document. A new page is crawled as soon as it is routed.

`fill` maps a path parameter's name (`task_id`, `fs_id`, `path`...) to a value; `name@fragment`
gives the value for patterns containing `fragment` (the longest fragment wins), for a name that
means different rows on different pages (`run_id@hydration/`, `run_id@router/evals/`). A pattern
with a parameter `fill` lacks is returned in `unfilled`: the canary crawl fails on it, so a new page
is never silently left out.
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


def value_for(fill: dict[str, object], pattern: str, name: str) -> object | None:
    """The value of parameter `name` in `pattern`: the most specific `name@fragment`, else `name`."""
    scoped = [(key.split("@", 1)[1], value) for key, value in fill.items()
              if key.startswith(f"{name}@") and key.split("@", 1)[1] in pattern]
    if scoped:
        return max(scoped, key=lambda kv: len(kv[0]))[1]
    return fill.get(name)


def _filled(fill: dict[str, object], pattern: str, regex: re.Pattern, prefix: str = "") -> str | None:
    values = {m.group("name"): value_for(fill, pattern, m.group("name")) for m in regex.finditer(pattern)}
    if any(value is None for value in values.values()):
        return None
    return prefix + regex.sub(lambda m: str(values[m.group("name")]), pattern)


def page_paths(fill: dict[str, object]) -> Found:
    found = Found()
    for pattern in _patterns():
        if SKIP.match(pattern) or "^" in pattern:
            continue
        path = _filled(fill, pattern, _CONVERTER, "/")
        if path is None:
            found.unfilled.append(pattern)
        else:
            found.paths.append((pattern, path))
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
        filled = _filled(fill, path, _OPENAPI_PARAM)
        if filled is None:
            found.unfilled.append(path)
        else:
            found.paths.append((path, filled))
    return found


def api_query_params(path: str) -> list[tuple[str, str]]:
    """(name, type) of each query parameter the OpenAPI document gives a GET of `path`."""
    params = openapi()["paths"][path]["get"].get("parameters", [])
    return [(p["name"], p.get("schema", {}).get("type", "")) for p in params if p.get("in") == "query"]


# --- Following links as a person does, and reading what they see --------------------------------

_HREF = re.compile(r'<a\b[^>]*?\bhref="(/[^"#?]*)(?:#[^"]*)?"', re.I)
_NAV_HREF = re.compile(r'<a\b[^>]*?\bhref="(/[^"#?]*)"[^>]*\bdata-nav="([^"]+)"', re.I)
# Not pages to read: sign-out, files (a contact card, exports), the API, Django's admin (an id is
# its subject), and the machine endpoints.
NOT_A_PAGE = re.compile(r"^/(admin/|api/|static/|accounts/logout|metrics|healthz|readyz|favicon)|\.(vcf|csv|json|ico|svg)$")


def _shape(path: str) -> str:
    """/tasks/12/ and /tasks/13/ are the same kind of page."""
    return re.sub(r"\d+", "N", path)


def nav_and_detail_paths(client: Client, *, per_page: int = 25) -> tuple[dict[str, str], list[str]]:
    """The pages a person reaches: every nav item from home (key -> path), each nav page, and from
    each nav page the first link of every kind of page below its section (/tasks/ -> /tasks/12/,
    the first row of each list). Returns (nav, paths in visiting order, without repeats)."""
    home = client.get("/").content.decode()
    nav = {key: path for path, key in _NAV_HREF.findall(home) if not NOT_A_PAGE.search(path)}
    paths, shapes = ["/"], {"/"}
    for path in nav.values():
        if path not in paths:
            paths.append(path)
            shapes.add(_shape(path))
    for start in list(nav.values()):
        response = client.get(start)
        if response.status_code != 200:
            continue
        html = response.content.decode(errors="replace")
        main = html[html.find("<main"):html.find("</main>")] if "<main" in html else html
        section = "/" + start.strip("/").split("/")[0] + "/"
        taken = 0
        for link in _HREF.findall(main):
            if NOT_A_PAGE.search(link) or not link.startswith(section) or _shape(link) in shapes:
                continue
            shapes.add(_shape(link))
            paths.append(link)
            taken += 1
            if taken >= per_page:
                break
    return nav, paths
