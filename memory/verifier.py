"""The deterministic verifier: pure (no model, no database), it takes the files of a file
system and its budgets and returns every violation.

Rules:
- every file other than index.md and master.md is within the per-file token budget;
- index.md and master.md together are within the always-loaded budget (they are in the
  assistant's context at all times);
- every other file is linked from index.md or master.md (otherwise it is a dead memory);
- every link in index.md or master.md to a file points to a file that exists.

A link is a markdown link whose target is a relative path (inline `[text](people/jane.md)`,
reference `[text]: people/jane.md`, or autolink `<people/jane.md>`); web and mail links are
not files. Targets are resolved from the root, where index and master live; `./`, a
`#fragment` and `%20`-style escapes are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from urllib.parse import unquote

from router.offline import estimate_tokens

from .paths import INDEX, MASTER, SPECIAL, PathError, clean_path

DEFAULT_FILE_TOKEN_BUDGET = 8_000
DEFAULT_ALWAYS_LOADED_TOKEN_BUDGET = 24_000

OVER_BUDGET = "over_budget"
ALWAYS_LOADED_OVER_BUDGET = "always_loaded_over_budget"
UNLINKED = "unlinked"
BROKEN_LINK = "broken_link"
KINDS = (OVER_BUDGET, ALWAYS_LOADED_OVER_BUDGET, UNLINKED, BROKEN_LINK)

# The link text is matched "unrolled" ([^…]*(?:\\.[^…]*)*) rather than as (?:[^…]|\\.)*: the
# same language, without one regex alternation per character (4× faster on a large index).
_INLINE = re.compile(r"\[[^\[\]\\]*(?:\\.[^\[\]\\]*)*\]\(\s*<?(?!#|//|[a-zA-Z][a-zA-Z0-9+.-]*:)([^()\s<>]+(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+[\"'(][^)]*)?\s*\)")
_REFERENCE = re.compile(r"^[ ]{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
_AUTOLINK = re.compile(r"<([^<>\s:]+\.md)>")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True)
class Budgets:
    file_tokens: int = DEFAULT_FILE_TOKEN_BUDGET
    always_loaded_tokens: int = DEFAULT_ALWAYS_LOADED_TOKEN_BUDGET


@dataclass(frozen=True)
class Violation:
    path: str
    kind: str
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)


def link_targets(markdown: str) -> list[str]:
    """Relative link targets in `markdown`, as written (code blocks and spans excluded)."""
    text = markdown
    # Each pass is skipped when its marker is absent: most memory files have no code and
    # no reference links, and these scans dominate the cost of a large index.
    if "```" in text or "~~~" in text:
        text = _FENCE.sub("", text)
    if "`" in text:
        text = _CODE_SPAN.sub("", text)
    # Inline links skip anchors and web or mail links inside the regex (most links are inline).
    targets = _INLINE.findall(text) if "](" in text else []
    found = (_REFERENCE.findall(text) if "]:" in text else []) + (_AUTOLINK.findall(text) if "<" in text else [])
    for target in found:
        target = target.strip()
        if not target or target.startswith("#") or _SCHEME.match(target) or target.startswith("//"):
            continue
        targets.append(target)
    return targets


def resolve_link(target: str) -> str:
    """The file path a link target names (raises PathError when it names no valid file)."""
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    while path.startswith("./"):
        path = path[2:]
    return clean_path(path)


def linked_paths(markdown: str) -> set[str]:
    return set(_resolved_links(markdown).paths)


@dataclass(frozen=True)
class _Links:
    paths: dict[str, str]  # each file the links name -> the first target naming it, as written
    broken: tuple[tuple[str, str], ...]  # (target, why) for targets that can name no file


# A target made only of these characters, with no "./", "%", "#" or "?", is already its own
# clean path; one regex over all targets at once settles them in C, so a 5,000-link index
# costs no Python call per link. Anything else goes through resolve_link.
_PLAIN_TARGETS = re.compile(
    r"^(?=[^\n]{1,255}$)(?:[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}/)*[A-Za-z0-9_-][A-Za-z0-9._-]{0,96}\.md$", re.MULTILINE
)


@lru_cache(maxsize=64)
def _resolved_links(markdown: str) -> _Links:
    """The links of index.md or master.md, resolved. Cached by content: the memory agent's
    rounds and every page re-verify the same index, and a str keeps its own hash."""
    targets = link_targets(markdown)
    # A root name that folds to index.md or master.md without being it is a lookalike, refused
    # by clean_path: leave it to the slow path so the verdict names it.
    plain = {t for t in _PLAIN_TARGETS.findall("\n".join(targets)) if t in SPECIAL or t.lower() not in SPECIAL}
    paths = {target: target for target in plain}
    broken = []
    for target in targets:
        if target in plain:
            continue
        try:
            paths.setdefault(resolve_link(target), target)
        except PathError as exc:
            broken.append((target, str(exc)))
    return _Links(paths, tuple(broken))


def verify(
    files: Mapping[str, str],
    budgets: Budgets = Budgets(),
    *,
    tokens: Mapping[str, int] | None = None,
    count: Callable[[str], int] | None = None,
) -> list[Violation]:
    """Every violation of the rules above, in a stable order.

    `files` maps each path to its content. Only index.md and master.md are read for links;
    a file's content is counted with `count` unless `tokens` already gives its count, so a
    caller holding counts for every file may pass an empty string as the other contents.
    """
    if count is None:
        count = estimate_tokens
    tokens = tokens or {}

    def tokens_of(path: str) -> int:
        known = tokens.get(path)
        return known if known is not None else count(files[path])

    violations: list[Violation] = []
    always_loaded = sum(tokens_of(special) for special in SPECIAL if special in files)
    if always_loaded > budgets.always_loaded_tokens:
        violations.append(Violation(
            INDEX, ALWAYS_LOADED_OVER_BUDGET,
            f"index.md and master.md together take {always_loaded} tokens, over their combined budget of "
            f"{budgets.always_loaded_tokens}: move detail out of them into linked files.",
        ))

    linked: set[str] = set()
    for special in SPECIAL:
        content = files.get(special)
        if content is None:
            continue
        links = _resolved_links(content)
        for target, why in links.broken:
            violations.append(Violation(special, BROKEN_LINK, f"The link to {target!r} cannot name a memory file: {why}"))
        for path in sorted(links.paths.keys() - files.keys()):
            violations.append(Violation(special, BROKEN_LINK,
                                        f"The link to {links.paths[path]!r} points to a file that does not exist."))
        linked |= links.paths.keys()

    # Set and dict operations in C instead of a Python step per file: the verifier runs over
    # every file of a file system on every write.
    others = files.keys() - set(SPECIAL)
    if tokens:
        sizes = {path: tokens[path] if path in tokens else count(files[path]) for path in others}
    else:
        sizes = dict(zip(others, map(count, map(files.__getitem__, others)), strict=True))
    over = {path for path, used in sizes.items() if used > budgets.file_tokens}
    unlinked = others - linked
    for path in sorted(over | unlinked):
        if path in over:
            violations.append(Violation(
                path, OVER_BUDGET,
                f"{path} takes {sizes[path]} tokens, over the per-file budget of {budgets.file_tokens}: cut it or split it.",
            ))
        if path in unlinked:
            violations.append(Violation(
                path, UNLINKED,
                f"{path} is not linked from {INDEX} or {MASTER}: the assistant would never know it is there.",
            ))
    return violations
