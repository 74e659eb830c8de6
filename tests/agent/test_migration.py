"""Upgrading a database from the schema before the agent app (validator 0003) keeps every row
of the moved tables: the outbox and the conversation→task links."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("validator", "0003_decision_execution_failed"), ("lindy", "0001_initial"), ("agent", None)]
AFTER = [("agent", "0002_outbox_index_name"), ("validator", "0004_move_outbox_and_conversation_to_agent")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([t for t in targets if t[1] is not None], at_end=True).apps


@pytest.mark.django_db(transaction=True)
def test_rows_in_every_moved_table_survive_the_move():
    old = _migrate(BEFORE)
    User = old.get_model("lindy", "User")
    Team = old.get_model("lindy", "Team")
    AgentTask = old.get_model("lindy", "AgentTask")
    Decision = old.get_model("validator", "Decision")
    OldOutbox = old.get_model("validator", "OutboxEntry")
    OldConversation = old.get_model("validator", "Conversation")
    ContentType = old.get_model("contenttypes", "ContentType")
    ContentType.objects.get_or_create(app_label="validator", model="outboxentry")

    user = User.objects.create(email="mover@example.test")
    team = Team.objects.create(name="Movers")
    task = AgentTask.objects.create(team=team, owner=user, title="Move me")
    decision = Decision.objects.create(team=team, user=user, task=task, tool="send_email", effect="third_party",
                                       status="executed")
    entry = OldOutbox.objects.create(team=team, user=user, task=task, decision=decision, tool="send_email",
                                     arguments={"to": ["a@b.test"]}, adapter="outbox", status="recorded")
    link = OldConversation.objects.create(user=user, channel="imessage", conversation_ref="+15550100", task=task)

    new = _migrate(AFTER)
    Outbox = new.get_model("agent", "OutboxEntry")
    OpenTask = new.get_model("agent", "OpenTask")
    moved = Outbox.objects.get(pk=entry.pk)
    assert (moved.tool, moved.arguments, moved.decision_id, moved.task_id) == (
        "send_email", {"to": ["a@b.test"]}, decision.pk, task.pk)
    assert OpenTask.objects.get(pk=link.pk).conversation_ref == "+15550100"
    cts = new.get_model("contenttypes", "ContentType").objects
    assert cts.filter(app_label="agent", model="outboxentry").exists()
    assert not cts.filter(app_label="validator", model="outboxentry").exists()
    # New rows get fresh ids after the moved ones (the sequences came along with the tables).
    assert Outbox.objects.create(team_id=team.pk, user_id=user.pk, tool="x", adapter="outbox",
                                 status="recorded").pk > entry.pk

    _migrate([("agent", None)])  # and back: the rows return to the validator's tables
    back = _migrate(BEFORE)
    assert back.get_model("validator", "OutboxEntry").objects.filter(pk=entry.pk).exists()
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
