"""Memory search matches the query as text, in any case, through indexes that lead with the file
system and keep no long pending list (memory/migrations/0006)."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from memory import selectors
from tests.conftest import client_for
from tests.memory.factories import write_linked

pytestmark = pytest.mark.django_db

# Each file holds one text with characters that mean something in a regular expression or in LIKE.
TEXTS = {
    "dot.md": "version a.b here", "dotless.md": "version aXb here", "paren.md": "the (draft) plan",
    "percent.md": "50% off", "star.md": "x*y and x**y", "slash.md": r"C:\temp\x", "caret.md": "^start",
    "dollar.md": "costs $5", "brackets.md": "see [x] and {1}", "pipe.md": "a|b", "question.md": "why?",
    "plus.md": "c++ code", "under.md": "snake_case", "accent.md": "École de Jane",
}


def _found(fs, query: str) -> list[str]:
    return [f.path for f in selectors.search(fs, query)]


@pytest.mark.parametrize("query, expected", [
    ("a.b", ["dot.md"]), ("(DRAFT)", ["paren.md"]), ("50%", ["percent.md"]), ("x**y", ["star.md"]),
    (r"\temp\x", ["slash.md"]), ("^start", ["caret.md"]), ("$5", ["dollar.md"]), ("[x] and {1}", ["brackets.md"]),
    ("a|b", ["pipe.md"]), ("why?", ["question.md"]), ("C++", ["plus.md"]), ("_case", ["under.md"]),
    ("école", ["accent.md"]), ("ÉCOLE DE", ["accent.md"]), ("***:x", []), ("(?i)start", []),
])
def test_search_matches_the_query_as_text_in_any_case(cast, query, expected):
    if connection.vendor == "sqlite" and not query.isascii():
        pytest.skip("SQLite's LIKE folds the case of ASCII letters only")
    fs = cast.team.memory_filesystem
    write_linked(fs, TEXTS)
    # index.md links every file under its name ("about dot.md"), so it is found by names alone.
    assert [path for path in _found(fs, query) if path != "index.md"] == expected


def test_search_by_path_and_content_in_path_order(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"b/kiwi.md": "fruit", "a/notes.md": "We buy KIWIS.", "c/other.md": "nothing"})
    assert _found(fs, "Kiwi") == ["a/notes.md", "b/kiwi.md", "index.md"]


def test_search_is_scoped_to_its_file_system(cast):
    mine, theirs = cast.member.memory_filesystem, cast.team.memory_filesystem
    write_linked(theirs, {"secret.md": "zebra plans"})
    write_linked(mine, {"mine.md": "no stripes"})
    assert _found(mine, "zebra") == []
    assert _found(theirs, "zebra") == ["secret.md"]


EXPECTED = {"\\": ["slash.md"], "(": ["paren.md"], "[": ["brackets.md"], "*": ["star.md"], "\\x": ["slash.md"]}


@pytest.mark.parametrize("query", ["a\x00b", "\\", "(", "[", "*", "\\x", "a" * 200])
def test_hostile_queries_answer_a_page_not_a_500(cast, query):
    fs = cast.team.memory_filesystem
    write_linked(fs, TEXTS)
    response = client_for(cast.member).get(f"/memory/{fs.pk}/", {"q": query})
    assert response.status_code == 200
    shown = [path for path in re.findall(r'<tr data-file="([^"]+)"', response.content.decode()) if path != "index.md"]
    assert shown == EXPECTED.get(query, [])


def test_search_indexes_lead_with_the_file_system_and_keep_no_long_pending_list(cast):
    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname, c.reloptions, pg_get_indexdef(c.oid) FROM pg_class c "
                       "WHERE c.relname IN ('memory_file_fs_path_trgm', 'memory_file_fs_content_trgm')")
        rows = {name: (options, definition) for name, options, definition in cursor.fetchall()}
    assert rows["memory_file_fs_path_trgm"][0] == ["fastupdate=off"]
    assert rows["memory_file_fs_content_trgm"][0] == ["gin_pending_list_limit=64"]
    for _, definition in rows.values():
        assert "USING gin (filesystem_id," in definition and "gin_trgm_ops" in definition
