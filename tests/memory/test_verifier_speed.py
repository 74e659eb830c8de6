"""The verifier's fast paths say exactly what the slow ones said: the unrolled link regex, the
plain-target shortcut, the per-content cache of parsed links, and the per-revision verdict cache
of the pages."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import selectors, services, verifier
from memory.paths import PathError
from memory.services import Change
from tests.memory.factories import write_linked

# The link regex as it was before it was unrolled: one alternation per character.
_REFERENCE_INLINE = re.compile(
    r"\[(?:[^\[\]\\]|\\.)*\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+[\"'(][^)]*)?\s*\)"
)
_SKIP = re.compile(r"^(#|//|[a-zA-Z][a-zA-Z0-9+.-]*:)")


def reference_resolve(targets):
    paths, broken = {}, []
    for target in targets:
        try:
            paths.setdefault(verifier.resolve_link(target), target)
        except PathError as exc:
            broken.append((target, str(exc)))
    return paths, broken


markdownish = st.lists(st.sampled_from(list("[]()<>\\#/:.-_ aZ0\n%`") + ["md", ".md", "http:", "./", "](", "[a]("]),
                       max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(markdownish)
def test_inline_targets_match_the_original_regex(text):
    expected = [t for t in _REFERENCE_INLINE.findall(text) if not _SKIP.match(t)]
    assert [t for t in verifier._INLINE.findall(text) if not _SKIP.match(t)] == expected
    if "`" not in text and "~~~" not in text and "]:" not in text and "<" not in text:
        assert verifier.link_targets(text) == expected


def test_a_web_link_with_parentheses_is_one_link_not_a_file_link_inside_it():
    assert verifier.link_targets("[a](http://x[b](c.md))") == []
    assert verifier.link_targets("[a](#top[b](c.md))") == []


targets = st.one_of(
    st.from_regex(r"\A(\./)?[a-z0-9 ._%-]{1,12}(/[A-Za-z0-9 ._-]{0,12})?\.(md|MD|txt)\Z"),
    st.text(max_size=20),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(targets, max_size=8))
def test_plain_target_shortcut_resolves_like_resolve_link(items):
    items = [t for t in items if "\n" not in t and t.strip() == t and t]
    markdown = "".join(f"- [x](<{t}>)\n" if " " in t else f"- [x]({t})\n" for t in items)
    verifier.forget_parsed()
    links = verifier._resolved_links(markdown)
    paths, broken = reference_resolve(verifier.link_targets(markdown))
    assert links.paths == paths.keys()
    assert set(links.broken) == set(broken)


def _reference_verdict(files: dict[str, str]) -> set[tuple[str, str]]:
    """(path, kind) of the link violations, by resolving every target one by one."""
    found, linked = set(), set()
    for special in ("index.md", "master.md"):
        if special not in files:
            continue
        paths, broken = reference_resolve(verifier.link_targets(files[special]))
        found |= {(special, verifier.BROKEN_LINK) for _ in broken}
        found |= {(special, verifier.BROKEN_LINK) for path in paths if path not in files}
        linked |= paths.keys()
    found |= {(path, verifier.UNLINKED) for path in files.keys() - linked - {"index.md", "master.md"}}
    return found


file_names = st.sampled_from(["a.md", "b/c.md", "c#.md", "d?.md", "50%.md", "x:y.md", "master.md", "e f.md",
                              "Index.md", "b/Index.md"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(targets, file_names), max_size=8), st.sets(file_names, max_size=6), st.booleans())
def test_links_that_spell_a_file_path_are_judged_as_resolving_them_would(items, existing, master):
    """The verifier's shortcut (a target equal to an existing path names it) agrees with resolving
    every target, whatever the paths hold: fragments, queries, escapes, schemes, lookalikes."""
    items = [t for t in items if "\n" not in t and t.strip() == t and t]
    markdown = "".join(f"- [x](<{t}>)\n" if " " in t else f"- [x]({t})\n" for t in items)
    files = dict.fromkeys(existing - {"master.md"}, "")
    files["master.md" if master else "index.md"] = markdown
    verifier.forget_parsed()
    verdict = {(v.path, v.kind) for v in verifier.verify(files) if v.kind in (verifier.BROKEN_LINK, verifier.UNLINKED)}
    assert verdict == _reference_verdict(files)


def test_parsed_links_are_cached_by_content():
    verifier.forget_parsed()
    files = {"index.md": "- [a](a.md)\n", "a.md": "A"}
    assert verifier.verify(files) == []
    assert verifier.verify(files) == []
    info = verifier._parsed.cache_info()
    assert info.hits >= 1 and info.misses == 1


@pytest.mark.django_db
def test_page_verdict_is_cached_per_revision_and_follows_every_change(cast, monkeypatch):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "Jane"})
    calls = []
    real = selectors.verdict_now
    monkeypatch.setattr(selectors, "verdict_now", lambda fs: calls.append(fs.pk) or real(fs))

    fresh = type(fs).objects.get(pk=fs.pk)
    assert selectors.status(fresh) == []
    assert selectors.status(type(fs).objects.get(pk=fs.pk)) == []
    assert len(calls) == 1  # the second page read the cached verdict

    services.changes_apply(filesystem=fs, changes=[Change("write", "people/jane.md", content="Jane Park")],
                           author_kind="memory_agent")
    assert selectors.status(type(fs).objects.get(pk=fs.pk)) == []
    assert len(calls) == 2  # a new revision is a new verdict

    services.budgets_update(filesystem=fs, file_tokens=50, always_loaded_tokens=500)
    assert selectors.status(type(fs).objects.get(pk=fs.pk)) == []
    assert len(calls) == 3  # so are new budgets


@pytest.mark.django_db
def test_rows_changed_outside_a_revision_are_not_trusted_forever(cast):
    """A row written around the services (a data migration, the shell) is seen by the next
    revision at the latest; the uncached verdict always sees it."""
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "Jane"})
    type(fs.files.first()).objects.filter(filesystem=fs, path="people/jane.md").update(tokens=10**6)
    assert [v.kind for v in selectors.verdict_now(fs)] == [verifier.OVER_BUDGET]


def test_lookalike_special_names_in_links_are_refused_as_by_clean_path():
    verifier.forget_parsed()
    links = verifier._resolved_links("- [a](Index.md)\n- [b](MASTER.md)\n- [c](people/Index.md)\n")
    assert {target for target, _ in links.broken} == {"Index.md", "MASTER.md"}
    assert "people/Index.md" in links.paths
