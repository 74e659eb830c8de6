"""The router's audit events move to the one audit log (lindy.AuditEntry), kept as they were:
actor, time, action, object, before and after (issue 27 part 6)."""

from django.db import migrations

BATCH = 1000


def forward(apps, schema_editor):
    AuditEvent = apps.get_model("router", "AuditEvent")
    AuditEntry = apps.get_model("lindy", "AuditEntry")
    rows = AuditEvent.objects.select_related("actor").order_by("pk").iterator(chunk_size=BATCH)
    batch = []
    for event in rows:
        batch.append(AuditEntry(
            actor_id=event.actor_id, actor_label=event.actor.email if event.actor_id else "",
            team_id=None, action=event.action, object_type=event.object_type, object_id=event.object_id,
            object_repr=event.object_repr, before=event.before, after=event.after, created_at=event.created_at,
        ))
        if len(batch) >= BATCH:
            AuditEntry.objects.bulk_create(batch)
            batch = []
    AuditEntry.objects.bulk_create(batch)


def backward(apps, schema_editor):
    AuditEvent = apps.get_model("router", "AuditEvent")
    AuditEntry = apps.get_model("lindy", "AuditEntry")
    router_types = ("route", "prompt_variant", "target", "provider", "providerbudget")
    AuditEvent.objects.bulk_create([
        AuditEvent(actor_id=e.actor_id, action=e.action, object_type=e.object_type, object_id=e.object_id,
                   object_repr=e.object_repr, before=e.before, after=e.after, created_at=e.created_at)
        for e in AuditEntry.objects.filter(object_type__in=router_types).exclude(action__startswith="rollout.")
    ], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [
        ("router", "0013_route_baseline_override"),
        ("lindy", "0003_audit_entry"),
    ]

    operations = [migrations.RunPython(forward, backward)]
