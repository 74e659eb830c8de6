"""Diffs as the history pages show them, rendered once per change and kept in the cache.

A FileChange never changes, so neither does its diff: a page of history costs one cache read
for its diffs instead of diffing and rendering every change again. A change missing from the
cache is rendered from its text, fetched then in one query when the page left it out."""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from . import diffs
from .models import FileChange

logger = logging.getLogger(__name__)
CACHE_SECONDS = 7 * 24 * 3600
STYLES = ("unified", "split")


def _key(change: FileChange, style: str) -> str:
    # The revision's time is part of the key so a database rebuilt under a surviving cache
    # never serves another change's diff under a reused id.
    return f"memory:diff:{style}:{change.pk}:{change.revision.created_at.timestamp()}"


def _rows(change: FileChange, style: str):
    if style == "split":
        return diffs.side_by_side(change.before, change.after)
    return diffs.unified(change.before, change.after)


def attach(changes: list[FileChange], style: str) -> None:
    """Set `diff_html` on each change (with its revision loaded), from the cache when it can."""
    keys = {change.pk: _key(change, style) for change in changes}
    try:
        cached = cache.get_many(list(keys.values()))
    except Exception:  # the cache is an optimisation: an outage costs speed, never the page
        logger.warning("memory cache unavailable", exc_info=True)
        cached = {}
    missing = [change for change in changes if keys[change.pk] not in cached]
    if missing and any({"before", "after"} & change.get_deferred_fields() for change in missing):
        texts = dict((pk, (before, after)) for pk, before, after in FileChange.objects.filter(
            pk__in=[change.pk for change in missing]).values_list("pk", "before", "after"))
        for change in missing:
            change.before, change.after = texts[change.pk]
    fresh = {}
    for change in missing:
        change.diff = _rows(change, style)
        fresh[keys[change.pk]] = render_to_string("memory/_diff.html", {"change": change, "style": style})
    if fresh:
        try:
            cache.set_many(fresh, CACHE_SECONDS)
        except Exception:
            logger.warning("memory cache unavailable", exc_info=True)
    for change in changes:
        key = keys[change.pk]
        # Our own rendering of memory/_diff.html, which escapes the text it shows.
        change.diff_html = mark_safe(cached[key] if key in cached else fresh[key])
