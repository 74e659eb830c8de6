"""Routes in words (issue 35 part 2): `{{ name|route_label }}` prints the route's human label with
its id in a tooltip, for any page that names a route (the router's own, the analyst's, the learner's)."""

from django import template
from django.utils.html import format_html

from router.registry import label_of

register = template.Library()


@register.filter
def route_label(name) -> str:
    if not name:
        return ""
    name = str(name)
    return format_html('<span class="route" title="{}" data-route="{}">{}</span>', name, name, label_of(name))


@register.filter
def route_words(name) -> str:
    """The label alone, as text (for a <select> option or a title)."""
    return label_of(str(name)) if name else ""
