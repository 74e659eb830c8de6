"""Whether this process's database is ready to serve: it answers, with every migration applied."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


class NotMigrated(Exception):
    """The database lacks migrations this code needs (a deploy ran before `manage.py migrate`)."""


_migrated = False  # once every migration is applied, this process's code stays satisfied


def database_ready() -> None:
    """Raises DatabaseError when the database does not answer, NotMigrated when it lacks a migration."""
    global _migrated
    connection.ensure_connection()
    if _migrated:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        raise NotMigrated(f"{len(pending)} migrations not applied, first {pending[0][0].app_label}.{pending[0][0].name}")
    _migrated = True
