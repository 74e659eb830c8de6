# The bundle moves onto lindy.jobs.LeasedJob: `heartbeat_at` (0008) is its lease's only time, so
# `claimed_at` goes, its rows kept in `heartbeat_at` where no beat was written yet.

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.db.models import F, Q

# As in channels_app.services.dispatch (a migration does not import the code it migrates).
DISPATCH_TIME_LIMIT = 600
DISPATCH_STALE_SECONDS = 30


def claimed_at_to_heartbeat(apps, schema_editor):
    InboundBundle = apps.get_model("channels_app", "InboundBundle")
    unbeaten = InboundBundle.objects.filter(heartbeat_at__isnull=True)
    # A hand-over begun by a worker that does not beat was dead only after the lease: its heartbeat is
    # set to go stale when that lease ends, so the sweep does not take a live run for dead.
    lease = max(float(getattr(settings, "CHANNELS_DISPATCH_LEASE_SECONDS", 0)), DISPATCH_TIME_LIMIT + 60)
    unbeaten.filter(status="dispatching").update(
        heartbeat_at=F("claimed_at") + timedelta(seconds=lease - DISPATCH_STALE_SECONDS))
    unbeaten.filter(~Q(status="dispatching")).update(heartbeat_at=F("claimed_at"))


def heartbeat_to_claimed_at(apps, schema_editor):
    InboundBundle = apps.get_model("channels_app", "InboundBundle")
    InboundBundle.objects.filter(heartbeat_at__isnull=False).update(claimed_at=F("heartbeat_at"))


class Migration(migrations.Migration):

    dependencies = [
        ('channels_app', '0008_bundle_heartbeat'),
    ]

    operations = [
        migrations.RunPython(claimed_at_to_heartbeat, heartbeat_to_claimed_at),
        migrations.RemoveField(model_name='inboundbundle', name='claimed_at'),
    ]
