"""memory.draft.MemoryDraft: the one draft every writer edits (changes_apply and the memory agent)."""

from __future__ import annotations

from collections import Counter

import pytest

from memory import draft as memory_draft
from memory import services
from memory.draft import (
    MAX_FILE_BYTES,
    AlreadyExists,
    Change,
    FileNotFound,
    InvalidChange,
    MemoryDraft,
    NothingChanged,
    StaleVersion,
    TokenCounter,
    written_contents,
)
from memory.models import MemoryFile, Revision
from memory.verifier import Budgets
from router import gateway
from router.offline import estimate_tokens
from tests.memory.factories import write_linked


@pytest.fixture
def team_fs(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "# Jane\nCTO of Initech.", "notes.md": "Some notes."})
    return fs


@pytest.fixture
def counted(monkeypatch):
    """Every text the router is asked to count, in order (the count itself is the offline estimate)."""
    texts: list[str] = []
    real = gateway.count_tokens

    def spy(*, text, **kwargs):
        texts.append(text)
        return real(text=text, **kwargs)

    monkeypatch.setattr(gateway, "count_tokens", spy)
    return texts


def test_load_keeps_stored_counts_and_reads_only_what_it_needs(team_fs, counted, django_assert_num_queries):
    with django_assert_num_queries(2):
        draft = MemoryDraft.load(team_fs, contents=())
    assert set(draft.files) == {"index.md", "people/jane.md", "notes.md"}
    assert draft.files["notes.md"].content is None and draft.files["index.md"].content is not None
    assert draft.files["notes.md"].tokens == MemoryFile.objects.get(filesystem=team_fs, path="notes.md").tokens
    assert draft.content("notes.md") == "Some notes."  # read when asked
    assert draft.violations() == [] and counted == []  # nothing changed: nothing counted


def test_apply_records_normalized_changes(team_fs):
    draft = MemoryDraft.load(team_fs)
    jane = draft.files["people/jane.md"].version
    draft.apply(Change("write", " people/jane.md ", content="# Jane Park"))
    draft.apply(Change("create", "ideas.md", content="Ideas"))
    draft.apply(Change("move", "notes.md", new_path="old/notes.md"))
    draft.apply(Change("delete", "ideas.md"))
    assert draft.changes == [
        Change("update", "people/jane.md", content="# Jane Park", base_version=jane),
        Change("create", "ideas.md", content="Ideas"),
        Change("move", "notes.md", new_path="old/notes.md", base_version=1),
        Change("delete", "ideas.md", base_version=1),
    ]
    assert [(r.op, r.path) for r in draft.records] == [
        ("update", "people/jane.md"), ("create", "ideas.md"), ("move", "old/notes.md"), ("delete", "ideas.md")]
    assert draft.records[2].before == draft.records[2].after == "Some notes."
    assert draft.changed_paths() == {"people/jane.md", "ideas.md", "old/notes.md"}
    # A change that changes nothing records nothing.
    assert draft.apply(Change("update", "people/jane.md", content="# Jane Park")) is None
    assert draft.apply(Change("move", "old/notes.md", new_path="old/notes.md")) is None
    assert len(draft.changes) == 4


def test_refused_changes_leave_the_draft_as_it_was(team_fs):
    draft = MemoryDraft.load(team_fs)
    before = {path: (f.content, f.version) for path, f in draft.files.items()}
    for change, error in [
        (Change("create", "notes.md", content="x"), AlreadyExists),
        (Change("move", "notes.md", new_path="people/jane.md"), AlreadyExists),
        (Change("update", "nope.md", content="x"), FileNotFound),
        (Change("update", "notes.md", content="x", base_version=99), StaleVersion),
        (Change("create", "nul.md", content="a\x00b"), InvalidChange),
        (Change("create", "big.md", content="x" * (MAX_FILE_BYTES + 1)), InvalidChange),
        (Change("create", "num.md", content=42), InvalidChange),
        (Change("create", "../x.md", content=""), InvalidChange),
        (Change("delete", "index.md"), InvalidChange),
        (Change("move", "index.md", new_path="x.md"), InvalidChange),
        (Change("move", "notes.md", new_path="master.md"), InvalidChange),
        (Change("explode", "notes.md"), InvalidChange),
    ]:
        with pytest.raises(error):
            draft.apply(change)
    assert {path: (f.content, f.version) for path, f in draft.files.items()} == before
    assert draft.changes == [] and draft.records == []


def test_violations_are_the_verifiers_on_the_draft(team_fs):
    draft = MemoryDraft.load(team_fs)
    draft.apply(Change("create", "people/ann.md", content="Ann"))
    assert [(v.path, v.kind) for v in draft.violations()] == [("people/ann.md", "unlinked")]
    draft.apply(Change("update", "index.md", content=draft.content("index.md") + "- [people/ann.md](people/ann.md)\n"))
    assert draft.violations() == []
    draft.apply(Change("update", "notes.md", content="word " * 200))
    assert [v.kind for v in draft.violations(Budgets(file_tokens=50))] == ["over_budget"]
    assert draft.violations() == []  # the file system's own budgets by default


def test_move_and_delete_bring_their_link_fixes(team_fs):
    draft = MemoryDraft.load(team_fs)
    done = draft.move("people/jane.md", "people/jane-park.md")
    assert [c.op for c in done] == ["move", "update"] and done[1].path == "index.md"
    assert "(people/jane-park.md)" in draft.content("index.md") and "(people/jane.md)" not in draft.content("index.md")
    done = draft.delete("notes.md")
    assert [c.op for c in done] == ["delete", "update"]
    assert "notes.md" not in draft.content("index.md")
    assert draft.violations() == []
    # Without update_links the link breaks, and the verifier says so.
    draft.apply(Change("create", "x.md", content="x"))
    draft.apply(Change("update", "index.md", content=draft.content("index.md") + "- [x.md](x.md)\n"))
    draft.move("x.md", "y.md", update_links=False)
    assert {v.kind for v in draft.violations()} == {"broken_link", "unlinked"}


def test_link_fixes_are_computed_against_the_drafts_versions(team_fs):
    draft = MemoryDraft.load(team_fs, contents=())
    index = draft.files["index.md"]
    (fix,) = draft.link_fixes_after_move("notes.md", "misc/notes.md")
    assert fix.path == "index.md" and fix.base_version == index.version and "(misc/notes.md)" in fix.content
    assert draft.changes == []  # computed, not applied
    assert draft.link_fixes_after_move("nobody.md", "elsewhere.md") == []


def test_a_changed_file_is_counted_once_per_content(team_fs, counted):
    draft = MemoryDraft.load(team_fs)
    draft.apply(Change("update", "notes.md", content="first version"))
    draft.apply(Change("update", "notes.md", content="second version"))
    assert counted == []  # counted when the verifier needs it, not on every step
    draft.violations()
    draft.violations()
    assert counted == ["second version"]
    draft.move("notes.md", "misc/notes.md")  # the index changes; the moved text was counted already
    draft.violations()
    assert counted == ["second version", draft.content("index.md")]
    assert draft.files["misc/notes.md"].tokens == estimate_tokens("second version")
    # Writing the draft as a revision with the draft's counter counts nothing again.
    revision = services.changes_apply(filesystem=team_fs, changes=draft.changes, author_kind="memory_agent",
                                      counter=draft.counter)
    assert counted == ["second version", draft.content("index.md")]
    stored = MemoryFile.objects.get(filesystem=team_fs, path="misc/notes.md")
    assert stored.content == "second version" and stored.tokens == estimate_tokens("second version")
    assert revision.changes.count() == len(draft.changes)


def test_changes_apply_counts_each_text_it_leaves_once(team_fs, counted):
    index = MemoryFile.objects.get(filesystem=team_fs, path="index.md")
    new_index = index.content + "- [a.md](a.md)\n"
    services.changes_apply(filesystem=team_fs, author_kind="system", changes=[
        Change("create", "a.md", content="draft one"),
        Change("update", "a.md", content="same text"),
        Change("update", "notes.md", content="same text"),
        Change("update", "index.md", content=new_index, base_version=index.version),
    ])
    # The intermediate version is never counted; two files with the same text are counted once.
    assert Counter(counted) == Counter({"same text": 1, new_index: 1})


def test_written_contents_follow_moves_and_deletes():
    assert written_contents([
        Change("create", "a.md", content="A"), Change("move", "a.md", new_path="b.md"),
        Change("create", "c.md", content="C"), Change("delete", "c.md"),
        Change("write", "d.md", content="D1"), Change("write", "d.md", content="D2"),
        Change("create", "e.md", content="bad\x00"), Change("create", "../f.md", content="F"),
    ]) == ["A", "D2"]


def test_token_counter_remembers_and_skips_empty_text(counted):
    counter = TokenCounter()
    assert counter("") == (0, True) and counter.knows("")
    first = counter("hello world")
    assert counter("hello world") == first and counted == ["hello world"]
    counter.prime(["hello world", "more"])
    assert counted == ["hello world", "more"]


def test_changes_apply_goes_through_the_draft(team_fs, monkeypatch):
    applied, verified = [], []
    real_apply, real_violations = MemoryDraft.apply, MemoryDraft.violations
    monkeypatch.setattr(MemoryDraft, "apply", lambda self, change: applied.append(change) or real_apply(self, change))
    monkeypatch.setattr(MemoryDraft, "violations",
                        lambda self, *a, **k: verified.append(self) or real_violations(self, *a, **k))
    services.changes_apply(filesystem=team_fs, changes=[Change("update", "notes.md", content="new")],
                           author_kind="system")
    services.file_move(filesystem=team_fs, path="notes.md", new_path="n.md", base_version=None, author_kind="system")
    assert [c.op for c in applied] == ["update", "move", "update"] and len(verified) == 2


def test_nothing_changed_is_a_typed_error(team_fs):
    content = MemoryFile.objects.get(filesystem=team_fs, path="notes.md").content
    revisions = Revision.objects.filter(filesystem=team_fs).count()
    for changes in ([Change("update", "notes.md", content=content)],
                    [Change("move", "notes.md", new_path="notes.md")],
                    []):
        with pytest.raises(NothingChanged) as raised:
            services.changes_apply(filesystem=team_fs, changes=changes, author_kind="system")
        assert isinstance(raised.value, InvalidChange) and raised.value.status == 422
    assert services.NothingChanged is memory_draft.NothingChanged
    assert Revision.objects.filter(filesystem=team_fs).count() == revisions


def test_revert_refuses_a_path_taken_since_without_reading_messages(team_fs):
    deleted = services.file_delete(filesystem=team_fs, path="notes.md", base_version=None, author_kind="system")
    # The old path is taken again, linked from master.md: index.md is as the delete left it.
    services.changes_apply(filesystem=team_fs, author_kind="system", changes=[
        Change("create", "master.md", content="See [the notes](notes.md)."),
        Change("create", "notes.md", content="a new file on the old path"),
    ])
    with pytest.raises(StaleVersion, match="cannot be reverted cleanly.*already exists"):
        services.revision_revert(revision=deleted, author_kind="person")
