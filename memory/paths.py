"""Memory file paths: what a valid path is, and how paths are cleaned and compared.

A path is relative, uses `/` between folders, ends in `.md`, has no empty, `.` or `..`
segment, no control characters or backslashes, and stays within MAX_PATH_LENGTH characters.
"""

from __future__ import annotations

import posixpath
import unicodedata

INDEX = "index.md"
MASTER = "master.md"
SPECIAL = (INDEX, MASTER)
MAX_PATH_LENGTH = 255
MAX_SEGMENT_LENGTH = 100


class PathError(ValueError):
    """A path that can never name a memory file."""


def clean_path(raw: str) -> str:
    """The canonical form of `raw`, or PathError saying what is wrong with it."""
    if not isinstance(raw, str):
        raise PathError("A path must be text.")
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


def is_special(path: str) -> bool:
    return path in SPECIAL


def folder_of(path: str) -> str:
    """'people/jane.md' -> 'people/'; 'index.md' -> ''."""
    head = posixpath.dirname(path)
    return f"{head}/" if head else ""


def name_of(path: str) -> str:
    return posixpath.basename(path)
