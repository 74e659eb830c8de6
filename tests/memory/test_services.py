"""Writes to memory: every one a verified revision, diffable and revertable."""

from __future__ import annotations

import pytest

from lindy.models import Team
from memory import services
from memory.models import FileChange, FileSystem, MemoryFile, Revision
from memory.services import Change
from tests.factories import UserFactory
from tests.memory.factories import write_linked


def files_of(fs) -> dict[str, str]:
    return dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))


@pytest.fixture
def team_fs(cast):
    return cast.team.memory_filesystem


def test_team_and_user_get_a_file_system_with_an_empty_index(db):
    team = Team.objects.create(name="Initech")
    user = UserFactory()
    for fs, kind in ((team.memory_filesystem, "team"), (user.memory_filesystem, "user")):
        assert fs.kind == kind
        assert files_of(fs) == {"index.md": ""}
        revision = fs.revisions.get()
        assert revision.author_kind == "system"
    assert services.filesystem_for_team(team) == team.memory_filesystem  # idempotent


def test_create_with_index_line_is_one_revision(team_fs, cast):
    revision = services.file_write(filesystem=team_fs, path="people/jane.md", content="# Jane\nCTO of Initech.",
                                   base_version=None, author_kind="person", author=cast.admin,
                                   index_description="Jane Park, Initech's CTO")
    assert revision.author == cast.admin and revision.author_kind == "person"
    assert sorted(revision.changes.values_list("op", "path")) == [("create", "people/jane.md"), ("update", "index.md")]
    assert "- [people/jane.md](people/jane.md) — Jane Park, Initech's CTO" in files_of(team_fs)["index.md"]
    jane = team_fs.files.get(path="people/jane.md")
    assert (jane.folder, jane.version, jane.size) == ("people/", 1, len(b"# Jane\nCTO of Initech."))
    assert jane.tokens > 0 and jane.tokens_exact is False  # offline: the conservative estimate


def test_unlinked_create_is_refused_with_the_violation(team_fs, cast):
    with pytest.raises(services.VerificationFailed) as refused:
        services.file_write(filesystem=team_fs, path="orphan.md", content="x", base_version=None,
                            author_kind="person", author=cast.admin)
    assert refused.value.violations[0].kind == "unlinked"
    assert refused.value.status == 422
    assert files_of(team_fs) == {"index.md": ""}
    assert team_fs.revisions.count() == 1


def test_over_budget_write_is_refused(team_fs):
    services.budgets_update(filesystem=team_fs, file_tokens=10, always_loaded_tokens=1000)
    with pytest.raises(services.VerificationFailed) as refused:
        write_linked(team_fs, {"big.md": "word " * 100})
    assert [v.kind for v in refused.value.violations] == ["over_budget"]
    assert not team_fs.files.filter(path="big.md").exists()


def test_budgets_cannot_drop_below_live_files(team_fs):
    write_linked(team_fs, {"a.md": "x" * 300})
    with pytest.raises(services.VerificationFailed):
        services.budgets_update(filesystem=team_fs, file_tokens=5, always_loaded_tokens=1000)
    team_fs.refresh_from_db()
    assert team_fs.file_token_budget == 8000


def test_stale_version_is_refused(team_fs):
    write_linked(team_fs, {"a.md": "one"})
    services.changes_apply(filesystem=team_fs, changes=[Change("update", "a.md", content="two", base_version=1)],
                           author_kind="memory_agent")
    with pytest.raises(services.StaleVersion, match="changed since you opened it"):
        services.changes_apply(filesystem=team_fs, changes=[Change("update", "a.md", content="three", base_version=1)],
                               author_kind="person")
    assert files_of(team_fs)["a.md"] == "two"


def test_person_must_send_a_version_to_update(team_fs, cast):
    write_linked(team_fs, {"a.md": "one"})
    with pytest.raises(services.StaleVersion):
        services.file_write(filesystem=team_fs, path="a.md", content="x", base_version=None, author_kind="person",
                            author=cast.admin)


def test_provenance_is_recorded(team_fs):
    revision = write_linked(team_fs, {"a.md": "one"}, author_kind="memory_agent")
    revision = services.changes_apply(
        filesystem=team_fs, changes=[Change("write", "a.md", content="two")], author_kind="learner",
        message="Learned a rule", source_kind="learner_run", source_id="7",
    )
    assert (revision.author_kind, revision.source_kind, revision.source_id, revision.message) == (
        "learner", "learner_run", "7", "Learned a rule")


def test_move_updates_links_and_history_follows(team_fs, cast):
    write_linked(team_fs, {"people/jane.md": "Jane"})
    revision = services.file_move(filesystem=team_fs, path="people/jane.md", new_path="customers/jane.md",
                                  base_version=1, author_kind="person", author=cast.admin)
    files = files_of(team_fs)
    assert "customers/jane.md" in files and "people/jane.md" not in files
    assert "(customers/jane.md)" in files["index.md"]
    move = revision.changes.get(op="move")
    assert (move.old_path, move.path) == ("people/jane.md", "customers/jane.md")


def test_move_without_link_update_is_refused(team_fs):
    write_linked(team_fs, {"a.md": "A"})
    with pytest.raises(services.VerificationFailed) as refused:
        services.file_move(filesystem=team_fs, path="a.md", new_path="b.md", base_version=None,
                           author_kind="person", update_links=False)
    assert {v.kind for v in refused.value.violations} == {"broken_link", "unlinked"}


def test_swap_two_files_in_one_revision(team_fs):
    write_linked(team_fs, {"a.md": "A", "b.md": "B"})
    services.changes_apply(filesystem=team_fs, author_kind="system", changes=[
        Change("move", "a.md", new_path="tmp.md"), Change("move", "b.md", new_path="a.md"),
        Change("move", "tmp.md", new_path="b.md"),
    ])
    files = files_of(team_fs)
    assert (files["a.md"], files["b.md"]) == ("B", "A")


def test_delete_removes_index_line_and_revert_restores(team_fs, cast):
    write_linked(team_fs, {"a.md": "A", "b.md": "B"})
    before = files_of(team_fs)
    deleted = services.file_delete(filesystem=team_fs, path="a.md", base_version=1, author_kind="person",
                                   author=cast.admin)
    assert "a.md" not in files_of(team_fs) and "(a.md)" not in files_of(team_fs)["index.md"]
    reverted = services.revision_revert(revision=deleted, author_kind="person", author=cast.admin)
    assert reverted.reverts == deleted
    assert files_of(team_fs) == before


def test_special_files_cannot_be_deleted_or_moved(team_fs):
    with pytest.raises(services.InvalidChange):
        services.changes_apply(filesystem=team_fs, changes=[Change("delete", "index.md")], author_kind="system")
    with pytest.raises(services.InvalidChange):
        services.changes_apply(filesystem=team_fs, changes=[Change("move", "index.md", new_path="x.md")],
                               author_kind="system")


def test_revert_refuses_when_the_file_changed_since(team_fs):
    first = write_linked(team_fs, {"a.md": "one"})
    update = services.changes_apply(filesystem=team_fs, changes=[Change("update", "a.md", content="two")],
                                    author_kind="memory_agent")
    services.changes_apply(filesystem=team_fs, changes=[Change("update", "a.md", content="three")],
                           author_kind="person")
    with pytest.raises(services.StaleVersion, match="changed afterwards"):
        services.revision_revert(revision=update, author_kind="person")
    assert files_of(team_fs)["a.md"] == "three"
    assert first.changes.count() == 2


def test_restore_file_to_text_before_a_change(team_fs):
    write_linked(team_fs, {"a.md": "one"})
    update = services.changes_apply(filesystem=team_fs, changes=[Change("update", "a.md", content="two")],
                                    author_kind="memory_agent")
    services.changes_apply(filesystem=team_fs, changes=[Change("update", "a.md", content="three")],
                           author_kind="person")
    change = update.changes.get()
    services.file_restore(filesystem=team_fs, change=change, author_kind="person")
    assert files_of(team_fs)["a.md"] == "one"
    assert FileChange.objects.filter(filesystem=team_fs, path="a.md").count() == 4


def test_bad_input_changes_nothing(team_fs):
    for change, error in [
        (Change("create", "../x.md", content=""), services.InvalidChange),
        (Change("update", "nope.md", content=""), services.FileNotFound),
        (Change("create", "big.md", content="x" * (services.MAX_FILE_BYTES + 1)), services.InvalidChange),
        (Change("create", "nul.md", content="a\x00b"), services.InvalidChange),
        (Change("explode", "a.md"), services.InvalidChange),
    ]:
        with pytest.raises(error):
            services.changes_apply(filesystem=team_fs, changes=[change], author_kind="system")
    with pytest.raises(services.InvalidChange):
        services.changes_apply(filesystem=team_fs, changes=[Change("write", "index.md", content="")],
                               author_kind="system")  # no change at all
    assert Revision.objects.filter(filesystem=team_fs).count() == 1
    assert FileSystem.objects.get(pk=team_fs.pk).files.count() == 1


def test_token_counts_are_exact_with_the_model_counter(team_fs, cast):
    from django.test import override_settings

    from tests.fakes.anthropic_api import FakeAnthropic

    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        write_linked(team_fs, {"a.md": "Counted by the model."})
        assert any(r.path == "/v1/messages/count_tokens" for r in fake.requests)
    counted = team_fs.files.get(path="a.md")
    assert counted.tokens_exact is True and counted.tokens > 0
    from tests.conftest import client_for

    html = client_for(cast.admin).get(
        f"/memory/{team_fs.pk}/files/a.md").content.decode()
    assert "est." not in html.split("data-path", 1)[1].split("</header>", 1)[0]


def test_restore_a_deleted_file_brings_back_its_index_line(team_fs):
    write_linked(team_fs, {"a.md": "A"})
    deleted = services.file_delete(filesystem=team_fs, path="a.md", base_version=None, author_kind="person")
    services.file_restore(filesystem=team_fs, change=deleted.changes.get(op="delete"), author_kind="person")
    files = files_of(team_fs)
    assert files["a.md"] == "A" and "(a.md)" in files["index.md"]


def test_restore_refuses_moves_and_creates(team_fs):
    created = write_linked(team_fs, {"a.md": "A"})
    moved = services.file_move(filesystem=team_fs, path="a.md", new_path="b.md", base_version=None,
                               author_kind="person")
    with pytest.raises(services.InvalidChange, match="revert its revision"):
        services.file_restore(filesystem=team_fs, change=moved.changes.get(op="move"), author_kind="person")
    with pytest.raises(services.InvalidChange, match="did not exist"):
        services.file_restore(filesystem=team_fs, change=created.changes.get(op="create"), author_kind="person")


def test_reverting_the_creation_of_the_index_is_refused_plainly(team_fs):
    first = team_fs.revisions.order_by("pk").first()
    with pytest.raises(services.InvalidChange, match="special"):
        services.revision_revert(revision=first, author_kind="person")


def test_migration_gives_existing_teams_and_users_a_file_system(cast):
    import importlib

    from django.apps import apps

    FileSystem.objects.filter(team=cast.team).delete()
    FileSystem.objects.filter(owner=cast.member).delete()
    migration = importlib.import_module("memory.migrations.0002_filesystems_for_existing")
    migration.create_missing(apps, None)
    for fs in (FileSystem.objects.get(team=cast.team), FileSystem.objects.get(owner=cast.member)):
        assert files_of(fs) == {"index.md": ""} and fs.revisions.count() == 1
    assert FileSystem.objects.filter(team=cast.other_team).count() == 1


def test_draft_verify_for_the_memory_agent(team_fs):
    from memory.selectors import files_content

    draft = files_content(team_fs)
    draft["people/new.md"] = "Someone new"
    assert [v.kind for v in services.draft_verify(filesystem=team_fs, files=draft)] == ["unlinked"]
    draft["index.md"] += "\n- [people/new.md](people/new.md)"
    assert services.draft_verify(filesystem=team_fs, files=draft) == []


def test_a_revision_lists_the_files_once_and_updates_its_rows_in_one_statement(team_fs, cast):
    """The draft of the locked file system already listed every row: writing the revision does
    not list them again, and the files it updates (a move among them) are one UPDATE."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.draft import MemoryDraft

    write_linked(team_fs, {f"notes/f{n}.md": f"file {n}" for n in range(30)})
    changes = [Change("write", f"notes/f{n}.md", content=f"edited {n}") for n in range(3)]
    changes.append(Change("move", "notes/f3.md", new_path="notes/g3.md"))
    changes += MemoryDraft.load(team_fs, contents=()).link_fixes_after_move("notes/f3.md", "notes/g3.md")
    with CaptureQueriesContext(connection) as captured:
        services.changes_apply(filesystem=team_fs, changes=changes, author_kind="system")
    file_queries = [q["sql"] for q in captured if '"memory_memoryfile"' in q["sql"]]
    listings = [sql for sql in file_queries if sql.startswith("SELECT") and '"content"' not in sql.split("FROM")[0]]
    updates = [sql for sql in file_queries if sql.startswith("UPDATE")]
    assert len(listings) == 1, listings
    assert len(updates) == 2, updates  # the move parks its row, then one UPDATE writes every row (index.md too)
    assert files_of(team_fs)["notes/g3.md"] == "file 3" and files_of(team_fs)["notes/f0.md"] == "edited 0"
    assert MemoryFile.objects.get(filesystem=team_fs, path="notes/f1.md").updated_at > (
        MemoryFile.objects.get(filesystem=team_fs, path="notes/f9.md").updated_at)
