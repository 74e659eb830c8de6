"""Memory text is untrusted (it comes from Slack, mail, meetings and models): render the
markdown, then keep only safe HTML with nh3. Scripts, event handlers, styles and
`javascript:` URLs never survive; links to other memory files point at their pages.

The markdown is CommonMark (markdown-it-py), with GitHub's tables and strikethrough: a list
right after a line of text is a list, as people (and models) write it."""

from __future__ import annotations

import hashlib
import logging

import nh3
from django.core.cache import cache
from django.urls import reverse
from markdown_it import MarkdownIt

from .paths import PathError
from .verifier import resolve_link

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}
SCHEMES = {"http", "https", "mailto"}
# Part of every cache key: raise it when the rendering rules change, so no page shows HTML made
# under the old ones.
RULES_VERSION = 1
CACHE_SECONDS = 7 * 24 * 3600
logger = logging.getLogger(__name__)


def _parser() -> MarkdownIt:
    # Inline HTML is kept for nh3 to judge, as before; HTML *blocks* are off: in CommonMark a line
    # starting with a tag swallows the lines below it up to a blank line as raw HTML, and memory
    # text is markdown that people and models write, not pages.
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).disable("html_block")
    # Every link is kept here and judged by nh3 below (its schemes, SCHEMES), so a refused link
    # disappears the same way whether it was written as markdown or as HTML.
    parser.validateLink = lambda url: True  # type: ignore[method-assign]
    return parser


_MARKDOWN = _parser()


def render_markdown(text: str, *, fs_id: int | None = None) -> str:
    html = _MARKDOWN.render(text)

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


def render_file(text: str, *, fs_id: int) -> str:
    """A file's page HTML, rendered once per text and kept in the cache: an index of thousands of
    links costs a markdown pass of a quarter of a second, and it is read far more than written.
    The key is the text's hash and the file system (its links point at that file system's pages),
    so any edit is a new key and nothing stale is ever served."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
    key = f"memory:html:{RULES_VERSION}:{fs_id}:{digest}"
    try:
        html = cache.get(key)
    except Exception:  # the cache is an optimisation: an outage costs speed, never the page
        logger.warning("memory cache unavailable", exc_info=True)
        html = None
    if html is None:
        html = render_markdown(text, fs_id=fs_id)
        try:
            cache.set(key, html, CACHE_SECONDS)
        except Exception:
            logger.warning("memory cache unavailable", exc_info=True)
    return html
