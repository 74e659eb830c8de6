"""Issue 35 part 6, "Memory as people expect": revert on a file's history reverts that file only (a
whole revision is reverted on its own page); a file's history follows it across moves; a link to a
missing file is flagged in the editor, refused by the verifier in index.md and master.md and
explained elsewhere; the new-file form explains the index line before refusing; the budget
index.md and master.md share is shown once."""

from __future__ import annotations

import pytest

from memory import selectors, services
from memory.models import FileChange, MemoryFile
from memory.services import Change
from tests.conftest import client_for
from tests.memory.factories import write_linked

FILES = {f"notes/n{i}.md": f"Note {i}, first text." for i in range(7)}


@pytest.fixture
def team_fs(cast):
    return cast.team.memory_filesystem


def _text(fs, path):
    return MemoryFile.objects.filter(filesystem=fs, path=path).values_list("content", flat=True).first()


def _seven_file_revision(fs, author):
    """Seven files written in one revision; then someone else edits one of them."""
    write_linked(fs, FILES)
    changes = [Change("update", path, content=text.replace("first", "second"), base_version=1)
               for path, text in FILES.items()]
    revision = services.changes_apply(filesystem=fs, changes=changes, author_kind="person", author=author,
                                      message="Second texts")
    later = fs.files.get(path="notes/n3.md")
    services.file_write(filesystem=fs, path="notes/n3.md", content="Note 3, an edit someone else made.",
                        base_version=later.version, author_kind="person", author=author)
    return revision


def test_reverting_one_files_change_leaves_the_revisions_other_files(cast, team_fs):
    revision = _seven_file_revision(team_fs, cast.admin)
    change = FileChange.objects.get(revision=revision, path="notes/n1.md")
    new = services.change_revert(filesystem=team_fs, change=change, author_kind="person", author=cast.admin)
    assert _text(team_fs, "notes/n1.md") == "Note 1, first text."
    assert [c.path for c in new.changes.all()] == ["notes/n1.md"]
    for i in (0, 2, 4, 5, 6):
        assert _text(team_fs, f"notes/n{i}.md") == f"Note {i}, second text."
    assert _text(team_fs, "notes/n3.md") == "Note 3, an edit someone else made."
    # A file edited after the change: refused, saying why and what to do instead; nothing written.
    stale = FileChange.objects.get(revision=revision, path="notes/n3.md")
    with pytest.raises(services.StaleVersion, match="Restore the text from before this change"):
        services.change_revert(filesystem=team_fs, change=stale, author_kind="person", author=cast.admin)
    assert _text(team_fs, "notes/n3.md") == "Note 3, an edit someone else made."


def test_the_history_page_reverts_the_file_and_the_revision_page_the_revision(cast, team_fs):
    revision = _seven_file_revision(team_fs, cast.admin)
    change = FileChange.objects.get(revision=revision, path="notes/n2.md")
    history_url = f"/memory/{team_fs.pk}/history/notes/n2.md"
    admin = client_for(cast.admin)
    html = admin.get(history_url).content.decode()
    assert f'action="/memory/{team_fs.pk}/changes/{change.pk}/revert"' in html and "Revert this change" in html
    assert f"/revisions/{revision.pk}/revert" not in html  # the whole revision is reverted on its own page
    assert f'action="/memory/{team_fs.pk}/revisions/{revision.pk}/revert"' in admin.get(
        f"/memory/{team_fs.pk}/revisions/{revision.pk}/").content.decode()
    url = f"/memory/{team_fs.pk}/changes/{change.pk}/revert"
    assert client_for(cast.member).post(url).status_code == 403  # reads team memory, may not change it
    assert client_for(cast.support).post(url).status_code == 404
    assert _text(team_fs, "notes/n2.md") == "Note 2, second text."
    done = admin.post(url, follow=True)
    page = done.content.decode()
    assert done.redirect_chain[-1][0] == history_url
    assert "Reverted notes/n2.md to its text before revision" in page and "are unchanged" in page
    assert _text(team_fs, "notes/n2.md") == "Note 2, first text."
    assert _text(team_fs, "notes/n5.md") == "Note 5, second text."
    # The stale one answers where it was asked, in words, and changes nothing.
    stale = FileChange.objects.get(revision=revision, path="notes/n3.md")
    refused = admin.post(f"/memory/{team_fs.pk}/changes/{stale.pk}/revert", follow=True).content.decode()
    assert "changed after revision" in refused
    assert _text(team_fs, "notes/n3.md") == "Note 3, an edit someone else made."


def test_reverting_a_create_a_move_and_a_delete(cast, team_fs):
    created = services.file_write(filesystem=team_fs, path="people/ann.md", content="Ann runs sales.",
                                  base_version=None, author_kind="person", author=cast.admin,
                                  index_description="Ann")
    moved = services.file_move(filesystem=team_fs, path="people/ann.md", new_path="people/sales/ann.md",
                               base_version=1, author_kind="person", author=cast.admin)
    assert "people/sales/ann.md" in _text(team_fs, "index.md")
    move = FileChange.objects.get(revision=moved, op="move")
    services.change_revert(filesystem=team_fs, change=move, author_kind="person", author=cast.admin)
    assert _text(team_fs, "people/ann.md") == "Ann runs sales." and _text(team_fs, "people/sales/ann.md") is None
    assert "(people/ann.md)" in _text(team_fs, "index.md")  # the index link followed it back
    # The create was before the move and the move-back: the file is not as it created it.
    create = FileChange.objects.get(revision=created, path="people/ann.md")
    with pytest.raises(services.StaleVersion):
        services.change_revert(filesystem=team_fs, change=create, author_kind="person", author=cast.admin)
    fresh = services.file_write(filesystem=team_fs, path="people/bob.md", content="Bob.", base_version=None,
                                author_kind="person", author=cast.admin, index_description="Bob")
    services.change_revert(filesystem=team_fs, change=FileChange.objects.get(revision=fresh, path="people/bob.md"),
                           author_kind="person", author=cast.admin)
    assert _text(team_fs, "people/bob.md") is None and "bob.md" not in _text(team_fs, "index.md")
    deleted = services.file_delete(filesystem=team_fs, path="people/ann.md",
                                   base_version=team_fs.files.get(path="people/ann.md").version,
                                   author_kind="person", author=cast.admin)
    services.change_revert(filesystem=team_fs, change=FileChange.objects.get(revision=deleted, op="delete"),
                           author_kind="person", author=cast.admin)
    assert _text(team_fs, "people/ann.md") == "Ann runs sales."
    assert selectors.status(team_fs) == []  # the live file system still passes the verifier


def test_history_follows_a_file_across_moves(cast, team_fs, django_assert_max_num_queries):
    # An older, different file once lived at the destination, and was deleted: not this file's history.
    write_linked(team_fs, {"people/jane.md": "An older Jane, long gone."})
    services.file_delete(filesystem=team_fs, path="people/jane.md", base_version=1, author_kind="person",
                         author=cast.admin)
    write_linked(team_fs, {"jane.md": "Jane is the CTO."})
    services.file_write(filesystem=team_fs, path="jane.md", content="Jane is the CTO of Initech.", base_version=1,
                        author_kind="person", author=cast.admin)
    services.file_move(filesystem=team_fs, path="jane.md", new_path="staff/jane.md", base_version=2,
                       author_kind="person", author=cast.admin)
    services.file_move(filesystem=team_fs, path="staff/jane.md", new_path="people/jane.md", base_version=3,
                       author_kind="person", author=cast.admin)
    services.file_write(filesystem=team_fs, path="people/jane.md", content="Jane Park is the CTO of Initech.",
                        base_version=4, author_kind="person", author=cast.admin)
    history = list(selectors.file_history(team_fs, "people/jane.md"))
    assert [(c.op, c.path) for c in history] == [
        ("update", "people/jane.md"), ("move", "people/jane.md"), ("move", "staff/jane.md"),
        ("update", "jane.md"), ("create", "jane.md")]
    assert [p for p, _, _ in selectors.file_lineage(team_fs, "people/jane.md")] == [
        "people/jane.md", "staff/jane.md", "jane.md"]
    member = client_for(cast.member)
    with django_assert_max_num_queries(20):
        html = member.get(f"/memory/{team_fs.pk}/history/people/jane.md").content.decode()
    assert html.count('<article class="change"') == 5
    assert "Jane is the CTO." in html and "An older Jane" not in html
    assert "from <code>jane.md</code> to <code>staff/jane.md</code>" in html


def test_a_link_to_a_missing_file_is_flagged_in_the_editor_and_explained(cast, team_fs):
    write_linked(team_fs, {"people/jane.md": "Jane."})
    admin = client_for(cast.admin)
    preview = f"/memory/{team_fs.pk}/preview"
    html = admin.post(preview, {"path": "people/jane.md",
                                "content": "Jane. Works with [Bob](people/bob.md) and [Ann](people/ann.md)."}).content.decode()
    assert "data-missing-links" in html and "<code>people/ann.md</code>, <code>people/bob.md</code>" in html
    assert "The verifier does not refuse this" in html and 'data-check-verifier="pass"' in html
    # Saved as the editor said (the verifier does not refuse it), the flag still shows in the editor.
    jane = team_fs.files.get(path="people/jane.md")
    saved = admin.post(f"/memory/{team_fs.pk}/edit/people/jane.md",
                       {"content": "Jane. Works with [Bob](people/bob.md).", "base_version": jane.version})
    assert saved.status_code == 302
    assert "data-missing-links" in admin.get(f"/memory/{team_fs.pk}/edit/people/jane.md").content.decode()
    # A link that names an existing file is not flagged.
    fine = admin.post(preview, {"path": "people/jane.md", "content": "See [index](index.md)."}).content.decode()
    assert "data-missing-links" not in fine
    # In index.md the verifier refuses it, and the editor says so before saving.
    index = team_fs.files.get(path="index.md")
    broken = index.content + "- [Ghost](people/ghost.md)\n"
    check = admin.post(preview, {"path": "index.md", "content": broken}).content.decode()
    assert 'data-check-verifier="fail"' in check and "people/ghost.md" in check and "data-missing-links" not in check
    refused = admin.post(f"/memory/{team_fs.pk}/edit/index.md", {"content": broken, "base_version": index.version})
    assert refused.status_code == 422 and "does not exist" in refused.content.decode()


def test_the_new_file_form_explains_the_index_line_before_it_is_refused(cast, team_fs):
    admin = client_for(cast.admin)
    form = admin.get(f"/memory/{team_fs.pk}/new").content.decode()
    assert "data-index-rule" in form and "the verifier refuses a new file nothing links to" in form
    assert form.index("data-index-rule") < form.index('name="add_to_index"')
    check = admin.post(f"/memory/{team_fs.pk}/preview", {"path": "people/zed.md", "content": "Zed."}).content.decode()
    assert 'data-check-verifier="fail"' in check and "not linked" in check
    refused = admin.post(f"/memory/{team_fs.pk}/new", {"path": "people/zed.md", "content": "Zed.", "save": "1"})
    assert refused.status_code == 422
    assert "data-index-hint" in refused.content.decode() and not team_fs.files.filter(path="people/zed.md").exists()
    created = admin.post(f"/memory/{team_fs.pk}/new", {"path": "people/zed.md", "content": "Zed.", "save": "1",
                                                       "add_to_index": "on", "description": "Zed"})
    assert created.status_code == 302 and team_fs.files.filter(path="people/zed.md").exists()


def test_the_shared_budget_of_index_and_master_is_shown_once(cast, team_fs):
    services.changes_apply(filesystem=team_fs, changes=[Change("create", "master.md", content="Acme sells anvils. " * 20)],
                           author_kind="person")
    write_linked(team_fs, {"people/jane.md": "Jane."})
    specials = {f.path: f.tokens for f in team_fs.files.filter(path__in=["index.md", "master.md"])}
    together, budget = sum(specials.values()), team_fs.always_loaded_token_budget
    html = client_for(cast.member).get(f"/memory/{team_fs.pk}/").content.decode()
    assert html.count("data-shared-budget") == 1
    assert f"{together:,} / {budget:,} tokens, index.md and master.md together" in html  # grouped for people
    assert f"/ {budget:,} tokens" not in html.replace(f"{together:,} / {budget:,} tokens, index.md", "")
    assert html.count("tokens of the shared budget") == 2
    page = client_for(cast.member).get(f"/memory/{team_fs.pk}/files/master.md").content.decode()
    assert f"{specials['master.md']} tokens of the shared budget" in page and f"{together:,} / {budget:,}" in page
    master = team_fs.files.get(path="master.md")
    check = client_for(cast.admin).post(f"/memory/{team_fs.pk}/preview",
                                        {"path": "master.md", "content": master.content}).content.decode()
    assert f'data-shared-tokens="{together}"' in check and f"{together:,}</strong> / {budget:,}" in check
