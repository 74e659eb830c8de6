"""Writing many rows in one statement on PostgreSQL, with no model instance per row.

bulk_create and bulk_update build an object (and compile a CASE per field for an update) per
row: for a hydration run's hundred items or a few hundred citations, that was most of the run's
own CPU. Here each column goes over as one array, and the database unnests them:

    inserted = rows_insert(Item, {"filesystem": [...], "source": [...], ...}, ignore_conflicts=True)
    rows_update(MemoryFile, pks, {"content": [...], "version": [...]}, same={"updated_at": now})

Those two only on PostgreSQL (`supported()`); callers keep their portable path for the other
databases. `row_update` (a frequent one-row UPDATE, such as a run's progress) works on every one.
Values are the fields' Python values as the callers would set them on an instance; date-times are
prepared by their field (a naive one is made aware as Django does), every other value is sent as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import connection, models


def supported() -> bool:
    return connection.vendor == "postgresql"


def _column(model: type[models.Model], name: str) -> tuple[models.Field, str]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field) and field.concrete, name
    return field, connection.ops.quote_name(field.column)


def _array(field: models.Field, values: Sequence) -> tuple[str, list]:
    if isinstance(field, models.DateTimeField):
        # An aware date-time goes as it is (what the field would send); any other value through the field.
        values = [v if isinstance(v, datetime) and v.utcoffset() is not None else field.get_db_prep_value(v, connection)
                  for v in values]
    elif not isinstance(values, list):
        values = list(values)
    db_type = field.db_type(connection) or ""
    # Text arrays for varchar columns: the column's own length check applies on assignment (an
    # explicit cast to varchar(n) would cut a long value silently).
    if db_type.startswith("varchar"):
        db_type = "text"
    return f"%s::{db_type}[]", values


def rows_insert(model: type[models.Model], columns: dict[str, Sequence], *, ignore_conflicts: bool = False) -> int:
    """INSERT one row per position of the column arrays (all of one length); with
    `ignore_conflicts`, a row that breaks a unique constraint is left out (ON CONFLICT DO NOTHING).
    Returns how many rows were inserted."""
    lengths = {len(values) for values in columns.values()}
    assert len(lengths) == 1, "every column needs one value per row"
    if not lengths.pop():
        return 0
    names, arrays, params = [], [], []
    for name, values in columns.items():
        field, column = _column(model, name)
        cast, prepared = _array(field, values)
        names.append(column)
        arrays.append(cast)
        params.append(prepared)
    sql = (f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({', '.join(names)}) "
           f"SELECT * FROM UNNEST({', '.join(arrays)})" + (" ON CONFLICT DO NOTHING" if ignore_conflicts else ""))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def rows_update(model: type[models.Model], pks: Sequence, columns: dict[str, Sequence], *,
                same: dict[str, object] | None = None, where_null: Sequence[str] = ()) -> int:
    """UPDATE the rows `pks`, each with its own value of every column (position by position), and
    the `same` value of each field in `same` for all of them; only rows whose `where_null` fields
    are NULL. Returns how many rows were updated."""
    if not pks:
        return 0
    table = connection.ops.quote_name(model._meta.db_table)
    pk_field = model._meta.pk
    assert pk_field is not None
    pk_cast, pk_values = _array(pk_field, pks)
    arrays, params, assignments = [pk_cast], [pk_values], []
    aliases = ["pk"]
    for n, (name, values) in enumerate(columns.items()):
        assert len(values) == len(pks), name
        field, column = _column(model, name)
        cast, prepared = _array(field, values)
        arrays.append(cast)
        params.append(prepared)
        aliases.append(f"c{n}")
        assignments.append(f"{column} = v.c{n}")
    constants = []
    for name, value in (same or {}).items():
        field, column = _column(model, name)
        assignments.append(f"{column} = %s")
        constants.append(field.get_db_prep_save(value, connection))
    # In the statement the constants (SET) come before the arrays (FROM).
    params = constants + params
    sql = (f"UPDATE {table} SET {', '.join(assignments)} "
           f"FROM UNNEST({', '.join(arrays)}) AS v({', '.join(aliases)}) "
           f"WHERE {table}.{connection.ops.quote_name(pk_field.column)} = v.pk"
           + "".join(f" AND {table}.{_column(model, name)[1]} IS NULL" for name in where_null))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def row_update(model: type[models.Model], where: dict[str, object], values: dict[str, object]) -> int:
    """UPDATE the rows whose fields equal `where` (by field name, "pk" for the primary key) with
    `values`, each prepared by its field as QuerySet.update would: the same statement without
    building a query (for a write done a dozen times a run, such as a hydration run's progress)."""
    table = connection.ops.quote_name(model._meta.db_table)
    assignments, params = [], []
    for name, value in values.items():
        field, column = _column(model, name)
        assignments.append(f"{column} = %s")
        params.append(field.get_db_prep_save(value, connection))
    conditions = []
    for name, value in where.items():
        found = model._meta.pk if name == "pk" else model._meta.get_field(name)
        assert isinstance(found, models.Field) and found.concrete, name
        conditions.append(f"{table}.{connection.ops.quote_name(found.column)} = %s")
        params.append(found.get_db_prep_value(value, connection))
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}", params)
        return cursor.rowcount
