"""Memory search through its trigram indexes, whatever the planner's statistics say.

Migration 0003 indexed UPPER(path) and UPPER(content), but PostgreSQL prices UPPER() like an
addition, so at a few thousand files it judged a sequential scan cheaper and never used them:
a search upper-cased every file on every request (~40 ms at 5,000 files, twice per page).
The same folding behind a function that says what it costs (COST 1000, in units of a simple
operator: upper-casing a file of a few kB takes ~10 µs) makes the planner choose the indexes
once a file system is large enough for them to matter, and keep the (file system) index for a
small one. The function is PL/pgSQL so it is not inlined back into a bare UPPER() with UPPER's
price. PostgreSQL only (SQLite searches a small demo without it).
"""

from django.db import migrations

FOLD = "memory_search_fold"
OLD_INDEXES = {
    "memory_file_path_trgm": "UPPER(path)",
    "memory_file_content_trgm": "UPPER(content)",
}
INDEXES = {
    "memory_file_path_fold_trgm": f"{FOLD}(path)",
    "memory_file_content_fold_trgm": f"{FOLD}(content)",
}


def _create(schema_editor, indexes):
    for name, expression in indexes.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON memory_memoryfile USING gin ({expression} gin_trgm_ops)")


def _drop(schema_editor, indexes):
    for name in indexes:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {FOLD}(text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE "
        "COST 1000 AS $$ BEGIN RETURN upper($1); END $$"
    )
    _create(schema_editor, INDEXES)
    _drop(schema_editor, OLD_INDEXES)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _create(schema_editor, OLD_INDEXES)
    _drop(schema_editor, INDEXES)
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {FOLD}(text)")


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_revision_words_of")]
    operations = [migrations.RunPython(forwards, backwards)]
