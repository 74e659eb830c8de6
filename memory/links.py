"""Edits to the links of index.md and master.md that keep a file system verifiable when a
file is created, moved or deleted. Pure text functions."""

from __future__ import annotations

import re

from .paths import PathError
from .verifier import linked_paths, resolve_link

_INLINE_TARGET = re.compile(r"(\]\(\s*<?)([^()\s<>]+)(>?)")
_REFERENCE_TARGET = re.compile(r"^([ ]{0,3}\[[^\]]+\]:\s*<?)(\S+?)(>?(?:\s+.*)?)$", re.MULTILINE)
_AUTOLINK_TARGET = re.compile(r"(<)([^<>\s:]+\.md)(>)")
_INLINE_LINK = re.compile(r"\[((?:[^\[\]\\]|\\.)*)\]\(\s*<?([^()\s<>]+)>?(?:\s+[\"'(][^)]*)?\s*\)")


def _names(target: str, path: str) -> bool:
    try:
        return resolve_link(target) == path
    except PathError:
        return False


# An inline link with its label: [label](target "title")
_LABELLED_LINK = re.compile(r"(\[)((?:[^\[\]\\]|\\.)*)(\]\(\s*<?)([^()\s<>]+)(>?(?:\s+[\"'(][^)]*)?\s*\))")


def _relabel(label: str, written: str, old: str, new: str) -> str:
    """`label` with each mention of the old path (as the path, or as the link wrote it) made
    the new path: `[people/jane.md](people/jane.md)` keeps naming the file it links to."""
    for mention in dict.fromkeys((written.split("#", 1)[0], old)):
        if mention:
            label = re.sub(rf"(?<![\w./-]){re.escape(mention)}(?![\w/-]|\.\w)", lambda _: new, label)
    return label


def rewrite_links(markdown: str, old: str, new: str) -> str:
    """Point every link to `old` at `new` (keeping any #fragment); a label that repeats the old
    path is changed with it."""

    def swap(match: re.Match) -> str:
        target = match.group(2)
        if not _names(target, old):
            return match.group(0)
        fragment = "#" + target.split("#", 1)[1] if "#" in target else ""
        return f"{match.group(1)}{new}{fragment}{match.group(3)}"

    def swap_labelled(match: re.Match) -> str:
        target = match.group(4)
        if not _names(target, old):
            return match.group(0)
        fragment = "#" + target.split("#", 1)[1] if "#" in target else ""
        label = _relabel(match.group(2), target, old, new)
        return f"{match.group(1)}{label}{match.group(3)}{new}{fragment}{match.group(5)}"

    markdown = _LABELLED_LINK.sub(swap_labelled, markdown)
    for pattern in (_REFERENCE_TARGET, _AUTOLINK_TARGET):
        markdown = pattern.sub(swap, markdown)
    return markdown


def drop_index_lines(markdown: str, path: str) -> str:
    """The index without the lines that link to `path`."""
    kept = [line for line in markdown.splitlines(keepends=True) if path not in _line_targets(line)]
    return "".join(kept)


def unlink(markdown: str, path: str) -> str:
    """Master text with links to `path` turned into their plain text (the prose stays)."""

    def plain(match: re.Match) -> str:
        return match.group(1) if _names(match.group(2), path) else match.group(0)

    text = _INLINE_LINK.sub(plain, markdown)
    text = _AUTOLINK_TARGET.sub(lambda m: m.group(2) if _names(m.group(2), path) else m.group(0), text)
    return "".join(
        line for line in text.splitlines(keepends=True)
        if not (_REFERENCE_TARGET.match(line.rstrip("\n")) and path in _line_targets(line))
    )


def _line_targets(line: str) -> set[str]:
    return linked_paths(line)


def index_line(path: str, description: str) -> str:
    description = " ".join(description.split())
    return f"- [{path}]({path})" + (f" — {description}" if description else "") + "\n"


def append_line(markdown: str, line: str) -> str:
    if markdown and not markdown.endswith("\n"):
        markdown += "\n"
    return markdown + line
