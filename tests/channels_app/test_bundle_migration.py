"""Moving the bundle onto lindy.jobs.LeasedJob (channels_app 0009) keeps its claim time: a bundle
that never beat gets its `claimed_at` as its heartbeat, and a hand-over begun by a worker that did
not beat yet goes stale only when its old lease would have passed (never sooner)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("channels_app", "0008_bundle_heartbeat")]
AFTER = [("channels_app", "0010_leased_job")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets, at_end=True).apps


@pytest.mark.django_db(transaction=True)
def test_claim_times_survive_as_heartbeats():
    from channels_app.services.dispatch import DISPATCH_STALE_SECONDS, dispatch_lease_seconds

    old = _migrate(BEFORE)
    user = old.get_model("lindy", "User").objects.create(email="bundler@example.test")
    profile = old.get_model("channels_app", "TextingProfile").objects.create(user_id=user.pk, phone="+16505550009")
    conversation = old.get_model("channels_app", "Conversation").objects.create(profile_id=profile.pk)
    Bundle = old.get_model("channels_app", "InboundBundle")
    claimed = timezone.now() - timedelta(minutes=3)
    waiting = Bundle.objects.create(conversation_id=conversation.pk, status="claimed", claimed_at=claimed)
    unbeaten = Bundle.objects.create(conversation_id=conversation.pk, status="dispatching", claimed_at=claimed)
    beaten = Bundle.objects.create(conversation_id=conversation.pk, status="dispatching", claimed_at=claimed,
                                   heartbeat_at=claimed + timedelta(minutes=2))

    new = _migrate(AFTER)
    after = new.get_model("channels_app", "InboundBundle").objects
    assert after.get(pk=waiting.pk).heartbeat_at == claimed
    assert after.get(pk=beaten.pk).heartbeat_at == claimed + timedelta(minutes=2)
    assert after.get(pk=unbeaten.pk).heartbeat_at == claimed + timedelta(
        seconds=dispatch_lease_seconds() - DISPATCH_STALE_SECONDS)

    back = _migrate(BEFORE)
    assert back.get_model("channels_app", "InboundBundle").objects.get(pk=waiting.pk).claimed_at == claimed
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
