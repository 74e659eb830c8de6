"""The line × day table's cells, one call each. Support's page has a cell per line and day (up to
25 lines × 14 days a page); through the template language each cell took a dozen lookups and
three number localizations, most of the page's time under the load test (issue 30). The figures
are small counts and two-decimal ratios, shown as Django shows them in en-us (no grouping)."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

LEVEL_WORD = {"critical": "Critical", "warn": "Warning"}
_NO_DATA = mark_safe('<span class="muted">–</span>')
_OPEN_ALERT = mark_safe('<strong title="Open alert">⚑</strong>')
_ACKNOWLEDGED_ALERT = mark_safe('<span title="Acknowledged alert">⚑</span>')


@register.simple_tag
def line_day_cell(cell: dict) -> SafeString:
    """One <td> of channels_app.selectors.line_day_grid: the day's ratio and level, the counts in
    its tooltip, and the line-day's alert flag (bold while open)."""
    level = cell["level"]
    if cell["ratio"] is None:
        figure = _NO_DATA
    elif level:
        figure = format_html("{} <small>{}</small>", cell["ratio"], LEVEL_WORD.get(level, "Warning"))
    else:
        figure = format_html("{}", cell["ratio"])
    flag = "" if not cell["alert_level"] else (_OPEN_ALERT if cell["alert_open"] else _ACKNOWLEDGED_ALERT)
    return format_html(
        '<td data-day="{}" data-level="{}"{} title="{} sent / {} received">{}{}</td>',
        cell["day"].isoformat(), level, format_html(' class="level-{}"', level) if level else "",
        cell["sent"], cell["received"], figure, flag,
    )
