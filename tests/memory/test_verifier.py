"""The pure verifier and path rules: no database."""

from __future__ import annotations

import pytest

from memory.links import drop_index_lines, rewrite_links, unlink
from memory.paths import PathError, clean_path
from memory.verifier import (
    ALWAYS_LOADED_OVER_BUDGET,
    BROKEN_LINK,
    OVER_BUDGET,
    UNLINKED,
    Budgets,
    link_targets,
    verify,
)


def kinds(violations):
    return sorted((v.path, v.kind) for v in violations)


def test_empty_index_passes():
    assert verify({"index.md": ""}) == []


def test_unlinked_file_is_a_dead_memory():
    violations = verify({"index.md": "", "people/jane.md": "Jane"})
    assert kinds(violations) == [("people/jane.md", UNLINKED)]
    assert "not linked" in violations[0].detail


def test_link_from_master_counts():
    files = {"index.md": "", "master.md": "Our CTO is [Jane](./people/jane.md#bio).", "people/jane.md": "Jane"}
    assert verify(files) == []


def test_broken_link_in_index():
    violations = verify({"index.md": "- [Gone](gone.md)\n- [Web](https://example.com) [Mail](mailto:a@b.c)"})
    assert kinds(violations) == [("index.md", BROKEN_LINK)]
    assert "gone.md" in violations[0].detail


def test_links_in_code_are_not_links():
    assert verify({"index.md": "```\n[x](missing.md)\n```\nand `[y](missing.md)`"}) == []


def test_reference_and_autolinks():
    files = {"index.md": "[jane]: people/jane.md\n<customers/initech.md>", "people/jane.md": "",
             "customers/initech.md": ""}
    assert verify(files) == []


def test_per_file_budget_uses_given_counts():
    files = {"index.md": "- [a](a.md)", "a.md": "x"}
    violations = verify(files, Budgets(file_tokens=10, always_loaded_tokens=100), tokens={"a.md": 11})
    assert kinds(violations) == [("a.md", OVER_BUDGET)]
    assert "11 tokens" in violations[0].detail and "10" in violations[0].detail


def test_combined_budget_for_index_and_master():
    files = {"index.md": "i" * 30, "master.md": "m" * 30}
    violations = verify(files, Budgets(file_tokens=100, always_loaded_tokens=15), count=len)
    assert kinds(violations) == [("index.md", ALWAYS_LOADED_OVER_BUDGET)]
    assert verify(files, Budgets(file_tokens=100, always_loaded_tokens=60), count=len) == []


def test_a_file_linked_from_both_index_and_master_does_not_hide_a_missing_one():
    files = {"index.md": "[a](a.md) [b](b.md)", "master.md": "[a](a.md) [b](./b.md) [gone](gone.md)", "a.md": "",
             "b.md": ""}
    violations = verify(files)
    assert kinds(violations) == [("master.md", BROKEN_LINK)]
    assert "'gone.md'" in violations[0].detail


def test_default_estimate_finds_files_over_budget_whatever_their_script():
    budgets = Budgets(file_tokens=10, always_loaded_tokens=100)
    index = "[a](a.md) [b](b.md) [c](c.md)"
    # 30 bytes is 10 tokens; "é" is 2 bytes, "€" 3: 10 characters can be 20 or 30 bytes.
    files = {"index.md": index, "a.md": "x" * 30, "b.md": "é" * 16, "c.md": "€" * 10}
    assert kinds(verify(files, budgets)) == [("b.md", OVER_BUDGET)]
    assert "11 tokens" in verify(files, budgets)[0].detail
    files["a.md"] = "x" * 31
    assert kinds(verify(files, budgets)) == [("a.md", OVER_BUDGET), ("b.md", OVER_BUDGET)]


def test_every_violation_is_reported():
    files = {"index.md": "[x](missing.md)", "a.md": "aaaa", "b.md": "b"}
    violations = verify(files, Budgets(file_tokens=2, always_loaded_tokens=100), count=len)
    assert kinds(violations) == [("a.md", OVER_BUDGET), ("a.md", UNLINKED), ("b.md", UNLINKED),
                                 ("index.md", BROKEN_LINK)]


def test_link_targets_skip_web_links_and_anchors():
    assert link_targets("[a](#top) [b](http://x.y/z.md) [c](people/a.md) [d](//cdn/x.md)") == ["people/a.md"]


@pytest.mark.parametrize("bad", [
    "", "/etc/passwd.md", "../up.md", "a/../b.md", "a//b.md", "./a.md", "a\\b.md", "notes.txt", "bell\x07.md",
    "new\nline.md", "x" * 300 + ".md", ".md", "C:/x.md", "a/.md", "a /b.md", "a.MD",
])
def test_bad_paths_are_refused(bad):
    with pytest.raises(PathError):
        clean_path(bad)


@pytest.mark.parametrize("good", ["index.md", "people/jane.md", "projects/2026/q3 plan.md", "café.md"])
def test_good_paths(good):
    assert clean_path(good) == good


def test_rewrite_links_follows_a_move():
    text = "- [Jane](people/jane.md#bio) and [ref]\n[ref]: ./people/jane.md\n- [Other](people/janet.md)"
    moved = rewrite_links(text, "people/jane.md", "team/jane.md")
    assert "[Jane](team/jane.md#bio)" in moved and "[ref]: team/jane.md" in moved
    assert "people/janet.md" in moved


def test_drop_index_lines_and_unlink():
    index = "- [a](a.md) — A\n- [b](b.md) — B\n"
    assert drop_index_lines(index, "a.md") == "- [b](b.md) — B\n"
    assert unlink("Ask [Jane](a.md) first.", "a.md") == "Ask Jane first."
