"""The navigation: each app registers its sections with the permission rule that shows them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import reverse


@dataclass(frozen=True)
class NavItem:
    key: str
    label: str
    url_name: str
    allowed: Callable[[object], bool]
    order: int = 50
    # Optional: a number shown beside the label (e.g. blocked actions waiting for review); it runs
    # on every page, so it must be cheap and may answer a capped label such as "99+".
    badge: Callable[[object], int | str] | None = None


_ITEMS: dict[str, NavItem] = {}


def register(item: NavItem) -> None:
    _ITEMS[item.key] = item


def items_for(user) -> list[dict]:
    visible = []
    for item in sorted(_ITEMS.values(), key=lambda i: (i.order, i.label)):
        if not item.allowed(user):
            continue
        visible.append(
            {
                "key": item.key,
                "label": item.label,
                "url": reverse(item.url_name),
                "badge": item.badge(user) if item.badge else 0,
            }
        )
    return visible
