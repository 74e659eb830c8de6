"""Values in words for people (issue 35 part 2): `{{ value|plain }}` prints a list as "a, b", a
mapping as "key: value; …", a big number grouped ("235,251"), yes/no for booleans, "—" for nothing;
never a Python repr such as "{'to': ['a@b.test']}"."""

from __future__ import annotations

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.html import format_html

register = template.Library()


def plain_text(value) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(intcomma(value))
    if isinstance(value, dict):
        return "; ".join(f"{key}: {plain_text(item)}" for key, item in value.items()) or "—"
    if isinstance(value, list | tuple | set):
        return ", ".join(plain_text(item) for item in value) or "—"
    return str(value)


@register.filter
def plain(value) -> str:
    return plain_text(value)


@register.filter
def person(user) -> str:
    """A person by the name they chose (User.display_name), their email in a tooltip; "" for nobody."""
    if user is None or not getattr(user, "pk", None):
        return ""
    return format_html('<span class="person" title="{}">{}</span>', user.email, user.display_name)
