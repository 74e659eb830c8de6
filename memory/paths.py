"""Memory file paths: what a valid path is, and how paths are cleaned and compared.

A path is relative, uses `/` between folders, ends in `.md`, has no empty, `.` or `..`
segment, no control characters or backslashes, and stays within MAX_PATH_LENGTH characters.
"""

from __future__ import annotations

import json
import posixpath
import unicodedata
from functools import lru_cache
from importlib import resources

INDEX = "index.md"
MASTER = "master.md"
SPECIAL = (INDEX, MASTER)
MAX_PATH_LENGTH = 255
MAX_SEGMENT_LENGTH = 100


# Letters of other scripts that render like the Latin letters of "index.md" and "master.md"
# (after NFKC and case folding, which already handle full-width and mathematical letters).
_CONFUSABLES = str.maketrans({
    "\u0456": "i", "\u0131": "i", "\u03b9": "i", "\u0269": "i", "\u04cf": "i", "\u026a": "i", "\u13a5": "i",
    "\u0578": "n", "\u0274": "n", "\u0501": "d", "\u0435": "e", "\u04bd": "e", "\u212e": "e", "\u1971": "e",
    "\u0445": "x", "\u03c7": "x", "\u00d7": "x", "\u043c": "m", "\u03bc": "m", "\u0430": "a", "\u0251": "a",
    "\u03b1": "a", "\u237a": "a", "\u0455": "s", "\ua731": "s", "\u0442": "t", "\u03c4": "t", "\u0433": "r",
    "\u1d26": "r", "\uab47": "r", "\uab48": "r",
})


@lru_cache(maxsize=1)
def _latin_prototypes() -> dict[int, str]:
    """Every non-ASCII character Unicode's confusables list (UTS #39, as the confusable-homoglyphs
    package ships it) pairs with an ASCII lookalike -> that lookalike, lower case. Built on the first
    non-ASCII name, once per process. ASCII is never remapped: "l" and "1" stay two letters, as
    people type them."""
    data = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    table: dict[int, str] = {}
    for char, homoglyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_ones = [h["c"] for h in homoglyphs if h["c"].isascii() and h["c"].isprintable()]
        if ascii_ones:
            table[ord(char)] = ascii_ones[0].lower()
    return table


def path_key(path: str) -> str:
    """The canonical key two paths are the same file by: NFKC, then case folded, then confusables
    folded (Cyrillic а to a, dotless ı to i...), then NFKC again. `Notes.md` and `notes.md`, NFC and
    NFD `café.md`, full-width and ASCII names, `ﬁle.md` and `file.md` share one key; a write whose
    path has the key of another file is refused by every writer (memory.draft.MemoryDraft)."""
    if path.isascii():
        return path.lower()  # casefold of ASCII, without the Unicode tables
    folded = unicodedata.normalize("NFKC", path).casefold().translate(_latin_prototypes())
    return unicodedata.normalize("NFKC", folded).casefold()


class PathError(ValueError):
    """A path that can never name a memory file."""


def special_name_key(name: str) -> str:
    """How a file name compares with the special names: NFKC, case folded, lookalike letters of
    other scripts mapped to Latin, whitespace and invisible characters dropped."""
    if name.isascii():  # the common case, without a per-character loop
        return "".join(name.split()).lower()
    folded = unicodedata.normalize("NFKC", name).casefold().translate(_CONFUSABLES)
    return "".join(ch for ch in folded if not (ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc", "Mn")))


def special_lookalike(raw: str) -> str | None:
    """The special name (index.md or master.md) that `raw` poses as without being it exactly,
    or None. Only the root holds special files, so only a root-level name can pose as one."""
    if raw in SPECIAL or "/" in raw.strip():
        return None
    key = special_name_key(raw)
    return next((name for name in SPECIAL if key == name), None)


def clean_path(raw: str) -> str:
    """The canonical form of `raw`, or PathError saying what is wrong with it. Every path
    check goes through here, so a lookalike of a special name is refused wherever it enters."""
    if not isinstance(raw, str):
        raise PathError("A path must be text.")
    posing_as = special_lookalike(raw)
    if posing_as is not None:
        raise PathError(f"{raw!r} looks like {posing_as} but is not it: the special files are named exactly "
                        f"{INDEX} and {MASTER}, in lowercase Latin letters.")
    path = raw.strip()
    if not path:
        raise PathError("A path is required.")
    if len(path) > MAX_PATH_LENGTH:
        raise PathError(f"A path may be at most {MAX_PATH_LENGTH} characters long.")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in path):
        raise PathError("A path may not contain control characters.")
    if "\\" in path:
        raise PathError("Use / between folders, not \\.")
    if path.startswith("/") or path.startswith("~") or (len(path) > 1 and path[1] == ":"):
        raise PathError("A path must be relative to the file system's root (no leading /).")
    segments = path.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise PathError("A path may not contain empty, '.' or '..' segments.")
        if segment != segment.strip():
            raise PathError("Folder and file names may not start or end with spaces.")
        if len(segment) > MAX_SEGMENT_LENGTH:
            raise PathError(f"Each folder or file name may be at most {MAX_SEGMENT_LENGTH} characters long.")
    if not path.lower().endswith(".md") or path.lower() == ".md" or segments[-1].lower() == ".md":
        raise PathError("Memory files are markdown: the name must end in .md.")
    if not path.endswith(".md"):
        raise PathError("Use a lowercase .md extension.")
    return path


def folder_of(path: str) -> str:
    """'people/jane.md' -> 'people/'; 'index.md' -> ''."""
    head = posixpath.dirname(path)
    return f"{head}/" if head else ""


def name_of(path: str) -> str:
    return posixpath.basename(path)
