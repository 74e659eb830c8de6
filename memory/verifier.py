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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import compress, repeat
from operator import lt
from urllib.parse import unquote

from router.offline import estimate_tokens, most_chars_within

from .paths import INDEX, MASTER, SPECIAL, PathError, clean_path

DEFAULT_FILE_TOKEN_BUDGET = 8_000
DEFAULT_ALWAYS_LOADED_TOKEN_BUDGET = 24_000

OVER_BUDGET = "over_budget"
ALWAYS_LOADED_OVER_BUDGET = "always_loaded_over_budget"
UNLINKED = "unlinked"
BROKEN_LINK = "broken_link"
KINDS = (OVER_BUDGET, ALWAYS_LOADED_OVER_BUDGET, UNLINKED, BROKEN_LINK)

# The link text is matched "unrolled" ([^…]*(?:\\.[^…]*)*) rather than as (?:[^…]|\\.)*: the
# same language, without one regex alternation per character; the quantifiers are possessive
# (*+) because nothing they give back could ever let the rest match, so the engine keeps no
# backtracking state per character. Web, mail and anchor targets are matched and dropped after
# (_SKIP): a link to "http://x(y.md)" is one web link, not a file link inside it.
_INLINE = re.compile(r"\[[^\[\]\\]*+(?:\\.[^\[\]\\]*+)*+\]\(\s*+<?([^()\s<>]++(?:\([^()\s]*+\)[^()\s<>]*+)*+)>?(?:\s+[\"'(][^)]*+)?\s*\)")
_REFERENCE = re.compile(r"^[ ]{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
_AUTOLINK = re.compile(r"<([^<>\s:]+\.md)>")
_SKIP = re.compile(r"#|//|[a-zA-Z][a-zA-Z0-9+.-]*:")
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


def _written_targets(markdown: str) -> list[str]:
    """Every link target in `markdown` as written, web, mail and anchor links included (code
    blocks and spans excluded)."""
    text = markdown
    # Each pass is skipped when its marker is absent: most memory files have no code and no
    # reference links, and these scans dominate the cost of a large index. A one-character
    # test goes first: it is a memchr, where "```" or "]:" in 100 kB is a real search.
    if ("`" in text and "```" in text) or ("~" in text and "~~~" in text):
        text = _FENCE.sub("", text)
    if "`" in text:
        text = _CODE_SPAN.sub("", text)
    targets = _INLINE.findall(text) if "](" in text else []
    if ":" in text and "]:" in text:
        targets += _REFERENCE.findall(text)
    if "<" in text:
        targets += _AUTOLINK.findall(text)
    return targets


def _file_target(target: str) -> str | None:
    """`target` stripped, or None when it is a web, mail or anchor link."""
    target = target.strip()
    return None if not target or _SKIP.match(target) else target


def link_targets(markdown: str) -> list[str]:
    """Relative link targets in `markdown`, as written (code blocks and spans excluded)."""
    return [target for target in map(_file_target, _written_targets(markdown)) if target is not None]


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
    paths: frozenset[str]  # every file the links name
    written_as: dict[str, str]  # how the links first name a path, where that is not the path itself
    broken: tuple[tuple[str, str], ...]  # (target, why) for targets that can name no file

    def written(self, path: str) -> str:
        return self.written_as.get(path, path)


# A target made only of these characters, with no "./", "%", "#" or "?", is already its own
# clean path (ASCII, segments of at most 100 characters not starting with ".", a lowercase
# .md name, 255 characters in all). A root name that folds to index.md or master.md is not
# plain: it is a lookalike (or the special name itself), left to clean_path, which names it.
_PLAIN = (r"(?!(?i:index|master)\.md{end})(?=[^\n]{{1,255}}+{end})"
          r"(?:[A-Za-z0-9_-][A-Za-z0-9._-]{{0,99}}+/)*+[A-Za-z0-9_-][A-Za-z0-9._-]{{0,99}}+(?<=\.md){end}")
# "\n".join(targets) + "\n" made only of plain lines (the usual index): one regex pass in C settles
# every target, so a 5,000-link index costs no Python call per link.
_ALL_PLAIN = re.compile("(?:" + _PLAIN.format(end=r"\n") + ")*+")
# Otherwise the lines that are not plain, in order, for resolve_link.
_NOT_PLAIN = re.compile("^(?!" + _PLAIN.format(end="$") + r")[^\n]+", re.MULTILINE)


@dataclass(frozen=True)
class _Parsed:
    written: tuple[str, ...]  # every link target, as written and in order (web and anchor links too)
    targets: frozenset[str]
    # Targets that might not name the file whose path they spell: a "#", "?", "%" or ":" in them
    # (a fragment, a query, an escape, a scheme), or a root name that folds to a special name.
    odd: frozenset[str]


_ODD_CHARS = "#?%:"


@lru_cache(maxsize=64)
def _parsed(markdown: str) -> _Parsed:
    """The link targets of index.md or master.md. Cached by content: the memory agent's rounds
    and every page re-verify the same index, and a str keeps its own hash."""
    written = tuple(_written_targets(markdown))
    targets = frozenset(written)
    lines = "\n".join(targets).lower()  # one memchr-speed test per marker instead of a step per target
    odd: frozenset[str] = frozenset()
    if any(ch in lines for ch in _ODD_CHARS) or "index.md" in lines or "master.md" in lines:
        odd = frozenset(t for t in targets if any(ch in t for ch in _ODD_CHARS) or t.lower() in SPECIAL)
    return _Parsed(written, targets, odd)


def forget_parsed() -> None:
    """Empty the per-content caches (for tests and the bench's cold measurement)."""
    _parsed.cache_clear()
    _resolved_links.cache_clear()


@lru_cache(maxsize=64)
def _resolved_links(markdown: str) -> _Links:
    """The links of index.md or master.md, each resolved, whatever files exist. Cached by content."""
    targets = _parsed(markdown).written
    lines = "\n".join(targets)  # a target holds no whitespace: one per line
    rest = [] if _ALL_PLAIN.fullmatch(lines + "\n") else _NOT_PLAIN.findall(lines)
    plain = frozenset(targets).difference(rest) if rest else frozenset(targets)
    written_as: dict[str, str] = {}
    broken = []
    for target in map(_file_target, rest):
        if target is None:
            continue
        try:
            path = resolve_link(target)
        except PathError as exc:
            broken.append((target, str(exc)))
            continue
        if path not in plain:
            written_as.setdefault(path, target)
    return _Links(plain.union(written_as) if written_as else plain, written_as, tuple(broken))


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

    # Set operations in C instead of a Python step per file: the verifier runs over every file
    # of a file system on every write. `linked` holds, per special file, the files its links name.
    linked: list[frozenset[str]] = []
    exact = True  # every set in `linked` names only existing files
    for special in SPECIAL:
        content = files.get(special)
        if content is None:
            continue
        parsed = _parsed(content)
        # Targets that are not exactly a file's path; a subset test first allocates nothing.
        others = frozenset() if files.keys() >= parsed.targets else parsed.targets.difference(files)
        if parsed.odd <= others and not any(map(_file_target, others)):
            # The usual index: every link spells an existing file's path, with nothing in it
            # that could make it name another (see _Parsed.odd), or is a web, mail or anchor
            # link. Such a target names that file, so none is broken and none is missing.
            linked.append(parsed.targets.difference(others) if others else parsed.targets)
            continue
        links = _resolved_links(content)
        for target, why in links.broken:
            violations.append(Violation(special, BROKEN_LINK, f"The link to {target!r} cannot name a memory file: {why}"))
        missing = links.paths - files.keys()
        for path in sorted(missing):
            violations.append(Violation(special, BROKEN_LINK,
                                        f"The link to {links.written(path)!r} points to a file that does not exist."))
        linked.append(links.paths)
        exact = exact and not missing
    unlinked = _unlinked(files, linked) if exact else set(files.keys()).difference(SPECIAL, *linked)
    over = _over_budget(files, budgets.file_tokens, tokens, count)
    for path in sorted(over.keys() | unlinked):
        if path in over:
            violations.append(Violation(
                path, OVER_BUDGET,
                f"{path} takes {over[path]} tokens, over the per-file budget of {budgets.file_tokens}: cut it or split it.",
            ))
        if path in unlinked:
            violations.append(Violation(
                path, UNLINKED,
                f"{path} is not linked from {INDEX} or {MASTER}: the assistant would never know it is there.",
            ))
    return violations


def _unlinked(files: Mapping[str, str], linked: list[frozenset[str]]) -> set[str] | frozenset[str]:
    """The files other than index.md and master.md that no set in `linked` names, when each set
    names existing files only. When the sets are disjoint, hold no special file and are as many
    as the other files, they name every one: settled by sizes, without a set of every path."""
    others = len(files) - sum(1 for special in SPECIAL if special in files)
    if (sum(map(len, linked)) == others and not any(special in names for names in linked for special in SPECIAL)
            and all(a.isdisjoint(b) for i, a in enumerate(linked) for b in linked[i + 1:])):
        return frozenset()
    return set(files.keys()).difference(SPECIAL, *linked)


def _over_budget(files: Mapping[str, str], budget: int, tokens: Mapping[str, int],
                 count: Callable[[str], int]) -> dict[str, int]:
    """The files other than index.md and master.md over `budget`, with their token counts."""
    sizes: Iterable[tuple[str, int]]
    if tokens:
        sizes = ((path, tokens[path] if path in tokens else count(files[path])) for path in files)
    elif count is estimate_tokens:
        # The default estimate is bounded by the length: only files too long to be surely
        # within budget are counted, and C loops find them without a Python step per file.
        longest = most_chars_within(budget)
        sizes = ((path, count(files[path]))
                 for path in compress(files.keys(), map(lt, repeat(longest), map(len, files.values()))))
    else:
        sizes = zip(files.keys(), map(count, files.values()), strict=True)
    return {path: used for path, used in sizes if used > budget and path not in SPECIAL}
