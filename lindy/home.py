"""The home page: each app registers the tiles that answer "what needs me now" for a role.

The core names no app (DESIGN.md): an app registers a `Tile` from its AppConfig.ready, with the
permission rule that shows it and a selector that reads its figures from the app's own records.
The selector returns the tile's context, or None to leave the tile out (nothing to say). Each
runs on every visit to the home page, so it must read a bounded number of rows
(tests/lindy/test_home.py holds every role's home page to a query budget).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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


@dataclass(frozen=True)
class Step:
    """One step of the first-minute checklist ("Connect Gmail"), registered by the app that owns
    the records that show it is done. `done` reads those records (one bounded query); `url` is the
    one click to the place where the step is taken."""

    key: str
    label: str
    hint: str
    allowed: Callable[[object], bool]
    done: Callable[[object], bool]
    url: Callable[[object], str]
    order: int = 50


_STEPS: dict[str, Step] = {}


def register_step(step: Step) -> None:
    _STEPS[step.key] = step


def registered_steps() -> list[Step]:
    return sorted(_STEPS.values(), key=lambda step: (step.order, step.key))


def checklist_for(user) -> list[dict] | None:
    """The steps this user can take, each with whether it is done and where it is done; None once
    every one is done (the checklist leaves the home page) or when none applies to the user."""
    rows = []
    for step in registered_steps():
        if not step.allowed(user):
            continue
        done = bool(step.done(user))
        rows.append({"key": step.key, "label": step.label, "hint": step.hint, "done": done,
                     "url": "" if done else step.url(user)})
    if not rows or all(row["done"] for row in rows):
        return None
    return rows
