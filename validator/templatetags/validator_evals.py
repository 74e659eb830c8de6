from django import template

register = template.Library()


@register.filter
def percent(value) -> str:
    """0.753 → "75%"; None (nothing measured) → "—"."""
    return "—" if value is None else f"{value:.0%}"


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None
