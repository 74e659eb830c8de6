"""lindy.bulk: many rows in one statement from arrays (PostgreSQL), and the one-row UPDATE every
database runs. They must write what bulk_create / QuerySet.update would."""

import datetime

import pytest
from django.db import DataError, connection, transaction
from django.utils import timezone

from lindy import bulk
from lindy.models import AgentTask, TaskEvent
from tests.factories import TeamFactory, member_of

pytestmark = pytest.mark.django_db

postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="array statements are PostgreSQL's")


@pytest.fixture
def task():
    team = TeamFactory()
    return AgentTask.objects.create(team=team, owner=member_of(team), title="Bulk")


@postgresql
def test_rows_insert_writes_each_row_and_leaves_out_conflicts(task):
    at = timezone.now()
    columns = {"task": [task.pk] * 3, "seq": [1, 2, 2], "actor": ["user", "tool", "tool"], "name": ["", "", ""],
               "content": ["a", "b", "c"], "tool_name": ["", "", ""], "tool_arguments": [None] * 3,
               "created_at": [at, datetime.datetime(2026, 1, 2, 3, 4, 5), at]}  # a naive one is made aware
    with pytest.warns(RuntimeWarning, match="naive datetime"):
        assert bulk.rows_insert(TaskEvent, columns, ignore_conflicts=True) == 2
    rows = list(task.events.order_by("seq").values_list("seq", "content", "created_at"))
    assert rows == [(1, "a", at), (2, "b", timezone.make_aware(datetime.datetime(2026, 1, 2, 3, 4, 5)))]
    assert bulk.rows_insert(TaskEvent, {"task": [], "seq": []}) == 0


@postgresql
def test_rows_insert_keeps_the_columns_length_check(task):
    with pytest.raises(DataError), transaction.atomic():
        bulk.rows_insert(TaskEvent, {"task": [task.pk], "seq": [1], "actor": ["x" * 11], "content": [""],
                                     "name": [""], "tool_name": [""], "created_at": [timezone.now()]})


@postgresql
def test_rows_update_sets_each_rows_values_only_where_asked(task):
    for seq in (1, 2, 3):
        TaskEvent.objects.create(task=task, seq=seq, actor="user", content=f"old {seq}",
                                 tool_name="" if seq != 3 else "kept")
    ids = list(task.events.order_by("seq").values_list("pk", flat=True))
    updated = bulk.rows_update(TaskEvent, ids, {"content": ["new 1", "new 2", "new 3"]}, same={"name": "same"},
                               where_null=["tool_arguments"])
    assert updated == 3
    assert list(task.events.order_by("seq").values_list("content", "name")) == [
        ("new 1", "same"), ("new 2", "same"), ("new 3", "same")]
    TaskEvent.objects.filter(pk=ids[0]).update(tool_arguments={"x": 1})
    assert bulk.rows_update(TaskEvent, ids[:2], {"content": ["again", "again"]}, where_null=["tool_arguments"]) == 1
    assert list(task.events.order_by("seq").values_list("content", flat=True)) == ["new 1", "again", "new 3"]


def test_row_update_writes_like_queryset_update_on_every_database(task):
    event = TaskEvent.objects.create(task=task, seq=1, actor="user", content="before")
    at = timezone.now()
    assert bulk.row_update(TaskEvent, {"pk": event.pk, "actor": "user"},
                           {"content": "after", "tool_arguments": {"a": [1, "é"]}, "created_at": at}) == 1
    assert bulk.row_update(TaskEvent, {"pk": event.pk, "actor": "tool"}, {"content": "not this"}) == 0
    event.refresh_from_db()
    assert (event.content, event.tool_arguments, event.created_at) == ("after", {"a": [1, "é"]}, at)
