"""Trigram indexes for the memory search (path or content contains the query, any case).

Django's `icontains` on PostgreSQL is `UPPER(col) LIKE UPPER('%q%')`, which no b-tree serves:
at 5,000 files every search read every row twice (count and page). A GIN trigram index on
the same expression does. PostgreSQL only: SQLite (the no-setup default) has no pg_trgm and
searches a small demo quickly without it.
"""

from django.db import migrations

INDEXES = {
    "memory_file_path_trgm": "UPPER(path)",
    "memory_file_content_trgm": "UPPER(content)",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, expression in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON memory_memoryfile USING gin ({expression} gin_trgm_ops)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_filesystems_for_existing")]
    operations = [migrations.RunPython(create, drop)]
