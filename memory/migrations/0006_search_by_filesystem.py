"""Memory search: trigram indexes that hold the file system and never a long pending list.

Measured at 5,000 files, a search read ~300 buffers of the path index, not because paths share
trigrams but because a GIN index with `fastupdate` keeps new rows in an unsorted pending list
(up to 4 MB) that every search scans row by row until a vacuum merges it, and a manual ANALYZE
doesn't. Every team's writes land in the same list, so on a busy server searches read it
always. So the path index (a path is a few dozen trigrams) takes entries straight into the tree
(`fastupdate = off`), and the content index keeps batching writes with a list of 64 kB at most.

Both lead with the file system (btree_gin), so a search in a small file system on a big
server narrows by its own files, and match `~*` on the columns themselves: a case-blind regular
expression of the query, escaped to a literal, which pg_trgm serves and which PostgreSQL
re-checks on a long file (an index.md linking thousands) several times faster than upper-casing
it, as migrations 0003 and 0005 did. PostgreSQL only (SQLite searches a small demo without it).
"""

from django.db import migrations

FOLD = "memory_search_fold"
OLD_INDEXES = {
    "memory_file_path_fold_trgm": f"{FOLD}(path)",
    "memory_file_content_fold_trgm": f"{FOLD}(content)",
}
INDEXES = {
    "memory_file_fs_path_trgm": ("path", "fastupdate = off"),
    "memory_file_fs_content_trgm": ("content", "gin_pending_list_limit = 64"),
}


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    for name, (column, storage) in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON memory_memoryfile "
                              f"USING gin (filesystem_id, {column} gin_trgm_ops) WITH ({storage})")
    for name in OLD_INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {FOLD}(text)")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {FOLD}(text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE "
        "COST 1000 AS $$ BEGIN RETURN upper($1); END $$"
    )
    for name, expression in OLD_INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON memory_memoryfile USING gin ({expression} gin_trgm_ops)")
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0005_search_fold_cost")]
    operations = [migrations.RunPython(forwards, backwards)]
