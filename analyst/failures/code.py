"""The code beside the log: the lines around each product frame, read from the running code.
Only the product's own .py files are read (the frame's path is stored data: it never opens
anything outside the product's root)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from lindy import failures

CONTEXT_LINES = 3


def _source(relative: str) -> list[str] | None:
    root = Path(settings.BASE_DIR).resolve()
    try:
        path = (root / relative).resolve()
        path.relative_to(root)
    except (ValueError, OSError):
        return None
    if path.suffix != ".py" or not path.is_file() or failures._product_file(str(path)) is None:
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def frame_code(frame: dict, *, context: int = CONTEXT_LINES) -> dict:
    """A product frame with `lines`: [(number, text, is_the_frame's_line)], and whether the running
    code still has the frame's line there (`moved`: the file changed since)."""
    lines = _source(frame.get("file", "")) if frame.get("product") else None
    number = int(frame.get("lineno") or 0)
    if not lines or not 1 <= number <= len(lines):
        return {**frame, "lines": [], "moved": bool(frame.get("product"))}
    start, end = max(1, number - context), min(len(lines), number + context)
    shown = [(n, lines[n - 1], n == number) for n in range(start, end + 1)]
    moved = lines[number - 1].strip() != (frame.get("line") or "").strip()
    return {**frame, "lines": shown, "moved": moved}


def product_frames_with_code(frames: list[dict]) -> list[dict]:
    return [frame_code(f) for f in frames if f.get("product")]
