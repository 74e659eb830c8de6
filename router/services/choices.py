"""A user's explicit model choice: it wins over any rollout on the routes it covers."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from ..models import ModelChoice, Route, Target


def model_choice_set(*, user, target: Target, route: str = "") -> ModelChoice:
    if not target.user_selectable:
        raise ValidationError(f"{target.name} is not offered for explicit choice.")
    if route and not Route.objects.filter(name=route).exists():
        raise ValidationError(f"No route {route!r}.")
    choice, _ = ModelChoice.objects.update_or_create(user=user, route=route, defaults={"target": target})
    return choice


def model_choice_clear(*, user, route: str = "") -> bool:
    deleted = 0
    for choice in ModelChoice.objects.filter(user=user, route=route):
        choice.delete()  # one by one so the routing table is invalidated
        deleted += 1
    return bool(deleted)
