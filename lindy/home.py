"""The home page: each app registers the tiles that answer "what needs me now" for a role.

The core names no app (DESIGN.md): an app registers a `Tile` from its AppConfig.ready, with the
permission rule that shows it and a selector that reads its figures from the app's own records.
The selector returns the tile's context, or None to leave the tile out (nothing to say). Each
runs on every visit to the home page, so it must read a bounded number of rows
(tests/lindy/test_home.py holds every role's home page to a query budget).

Optional tiles: a tile whose figures belong to an app that may not be installed names its
selector by dotted path in a setting (`optional_selector`); the tile shows only where that
selector imports. The heavy-edit rate of email drafting is one: see
`settings.LINDY_HOME_HEAVY_EDIT_SELECTOR` and `heavy_edit_context` below.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

from . import permissions

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tile:
    key: str
    template: str
    allowed: Callable[[object], bool]
    context: Callable[[object], dict | None]
    order: int = 50


_TILES: dict[str, Tile] = {}


def register(tile: Tile) -> None:
    _TILES[tile.key] = tile


def registered() -> list[Tile]:
    return sorted(_TILES.values(), key=lambda tile: (tile.order, tile.key))


def tiles_for(user) -> list[dict]:
    """The tiles this user sees, in order, each with its context: {"key", "template", "data"}."""
    shown = []
    for tile in registered():
        if not tile.allowed(user):
            continue
        data = tile.context(user)
        if data is None:
            continue
        shown.append({"key": tile.key, "template": tile.template, "data": data})
    return shown


@cache
def optional_selector(setting_name: str) -> Callable | None:
    """The callable a setting names by dotted path, or None when its app is not installed (or no
    longer offers it): the hook for tiles whose figures belong to an app built separately."""
    path = getattr(settings, setting_name, "")
    if not path:
        return None
    try:
        return import_string(path)
    except ImportError:
        logger.info("home: %s names %s, which does not import; its tile is not shown", setting_name, path)
        return None


def heavy_edit_context(user) -> dict | None:
    """The heavy-edit rate of the user's email drafts, once email drafting exists.

    The hook: `settings.LINDY_HOME_HEAVY_EDIT_SELECTOR` (default
    "drafting.selectors.heavy_edit_summary") names a function `(user) -> dict | None` returning
    {"rate": float | None (heavy edits / scored pairs, 0..1), "heavy": int, "scored": int,
     "unscorable": int, "days": int, "url": str (the drafts page)}
    or None when the user has no drafts. Until that function exists the tile is not shown."""
    selector = optional_selector("LINDY_HOME_HEAVY_EDIT_SELECTOR")
    if selector is None:
        return None
    return selector(user)


register(Tile("heavy-edits", "lindy/home_heavy_edits.html", permissions.can_use_workspace, heavy_edit_context,
              order=40))
