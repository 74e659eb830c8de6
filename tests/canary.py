"""The canary crawl (issue 29, part 3): plant a unique marker in every text field of a member's
private records, then read every page (from the URL resolver) and every API GET (from the OpenAPI
document) as people who may not read them. A marker found names the page and the field it came from.

`plant(cast)` builds the member's private world through the product's services and factories, then
stamps every free-text field of every row it created (TextFields, content-bearing CharFields, the
string leaves of JSON fields) with `CANARY<n>`; `crawl(client, fill, canaries)` returns the leaks.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from django.apps import apps
from django.db import models
from django.test import Client

from tests.crawl import api_get_paths, page_paths

# CharFields that carry content (a title, a subject, a reason...), by the words in their name; other
# CharFields are identifiers, statuses and keys that pages must be able to read back.
CONTENT_WORDS = ("title", "subject", "body", "text", "content", "summary", "reason", "why", "error", "message",
                 "snippet", "question", "answer", "note", "justification", "quote", "preview")
MARKER = re.compile(r"CANARY\d{6}")
APPS = ("lindy", "memory", "validator", "drafting", "analyst", "channels_app", "hydration", "agent")


@dataclass
class Canaries:
    where: dict[str, str] = field(default_factory=dict)  # marker -> "app.Model.field #pk"
    _counter: itertools.count = field(default_factory=lambda: itertools.count(100000))

    def new(self, label: str) -> str:
        marker = f"CANARY{next(self._counter)}"
        self.where[marker] = label
        return marker


def _models():
    return [m for m in apps.get_models() if m._meta.app_label in APPS and not m._meta.proxy]


def high_water() -> dict[type, int]:
    """The largest pk of every model now: rows above it were created by `plant`."""
    marks = {}
    for model in _models():
        if isinstance(model._meta.pk, (models.AutoField, models.BigAutoField)):
            marks[model] = model.objects.aggregate(m=models.Max("pk"))["m"] or 0
    return marks


def _stampable(f) -> bool:
    if f.primary_key or f.choices or getattr(f, "unique", False):
        return False
    if isinstance(f, models.TextField):
        return True
    if isinstance(f, models.CharField) and not isinstance(f, (models.SlugField, models.EmailField)):
        return any(word in f.name for word in CONTENT_WORDS) and (f.max_length or 0) >= 16
    return isinstance(f, models.JSONField)


def _stamp_json(value, marker: str):
    if isinstance(value, str):
        return f"{value} {marker}"
    if isinstance(value, list):
        return [_stamp_json(v, marker) for v in value]
    if isinstance(value, dict):
        return {k: _stamp_json(v, marker) for k, v in value.items()}
    return value


def stamp_new_rows(since: dict[type, int], canaries: Canaries, *, skip: set[str] = frozenset()) -> int:
    """Put a marker in every stampable field of every row created after `since`."""
    stamped = 0
    for model, mark in since.items():
        label = f"{model._meta.app_label}.{model.__name__}"
        if label in skip:
            continue
        fields = [f for f in model._meta.concrete_fields if _stampable(f)]
        if not fields:
            continue
        for row in model.objects.filter(pk__gt=mark):
            changes = {}
            for f in fields:
                marker = canaries.new(f"{label}.{f.name} #{row.pk}")
                value = getattr(row, f.attname)
                if isinstance(f, models.JSONField):
                    changes[f.attname] = _stamp_json(value, marker) if value else {"canary": marker}
                elif isinstance(f, models.TextField):
                    changes[f.attname] = f"{value or ''} {marker}".strip()
                else:
                    changes[f.attname] = f"{(value or '')[: (f.max_length or 0) - 13]} {marker}".strip()
            model.objects.filter(pk=row.pk).update(**changes)
            stamped += len(changes)
    return stamped


def crawl(client: Client, fill: dict, canaries: Canaries, *, api_client: Client | None = None) -> tuple[list[str], list[str]]:
    """Every page and every API GET; returns (leaks as "page: field", pages visited)."""
    leaks, visited = [], []
    for _pattern, path in page_paths(fill).paths:
        visited.append(path)
        body = client.get(path).content.decode(errors="replace")
        leaks += [f"{path}: {canaries.where.get(m, m)}" for m in sorted(set(MARKER.findall(body)))]
    for _pattern, path in api_get_paths(fill).paths:
        visited.append(path)
        body = (api_client or client).get(path).content.decode(errors="replace")
        leaks += [f"{path}: {canaries.where.get(m, m)}" for m in sorted(set(MARKER.findall(body)))]
    return leaks, visited
