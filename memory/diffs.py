"""Diffs of memory text, unified or side by side, as rows a template escapes."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CONTEXT_LINES = 3


@dataclass(frozen=True)
class Line:
    kind: str  # "hunk", "add", "del" or "ctx"
    text: str


@dataclass(frozen=True)
class Row:
    kind: str  # "hunk", "equal", "replace", "insert", "delete"
    left_no: int | None
    left: str
    right_no: int | None
    right: str


def unified_text(before: str, after: str, old_path: str, new_path: str) -> str:
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{old_path}", tofile=f"b/{new_path}", n=CONTEXT_LINES,
        )
    )


def unified(before: str, after: str) -> list[Line]:
    lines = []
    for raw in difflib.unified_diff(before.splitlines(), after.splitlines(), n=CONTEXT_LINES, lineterm=""):
        if raw.startswith(("---", "+++")):
            continue
        if raw.startswith("@@"):
            lines.append(Line("hunk", raw))
        elif raw.startswith("+"):
            lines.append(Line("add", raw[1:]))
        elif raw.startswith("-"):
            lines.append(Line("del", raw[1:]))
        else:
            lines.append(Line("ctx", raw[1:]))
    return lines


def side_by_side(before: str, after: str) -> list[Row]:
    left, right = before.splitlines(), after.splitlines()
    rows = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first = group[0]
        rows.append(Row("hunk", None, f"line {first[1] + 1}", None, f"line {first[3] + 1}"))
        for tag, i1, i2, j1, j2 in group:
            span = max(i2 - i1, j2 - j1)
            for k in range(span):
                li, rj = i1 + k, j1 + k
                has_left, has_right = li < i2, rj < j2
                rows.append(Row(
                    tag,
                    li + 1 if has_left else None, left[li] if has_left else "",
                    rj + 1 if has_right else None, right[rj] if has_right else "",
                ))
    return rows
