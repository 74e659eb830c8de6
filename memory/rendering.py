"""Memory text is untrusted (it comes from Slack, mail, meetings and models): render the
markdown, then keep only safe HTML with nh3. Scripts, event handlers, styles and
`javascript:` URLs never survive; links to other memory files point at their pages."""

from __future__ import annotations

import markdown as md
import nh3
from django.urls import reverse

from .paths import PathError
from .verifier import resolve_link

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}
SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str, *, fs_id: int | None = None) -> str:
    html = md.markdown(text, extensions=["tables", "fenced_code", "sane_lists"], output_format="html")

    def rewrite(tag: str, attribute: str, value: str) -> str | None:
        if tag == "a" and attribute == "href" and fs_id is not None and ":" not in value.split("/", 1)[0]:
            try:
                path = resolve_link(value)
            except PathError:
                return value
            return reverse("memory:file", args=[fs_id, path])
        return value

    return nh3.clean(
        html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES, link_rel="noopener noreferrer nofollow",
        attribute_filter=rewrite, strip_comments=True,
    )
