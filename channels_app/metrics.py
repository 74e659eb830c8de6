"""lindy_debounce_delay_seconds : how long after a conversation's last inbound message its bundle was
claimed for the agent (the debounce window plus the queue's lag). Registered in ChannelsConfig.ready."""

from collections.abc import Iterable

from django.db.models import OuterRef, Subquery
from prometheus_client.core import Metric

from lindy.metrics import duration_histogram

from .models import InboundBundle, InboundMessage

BUCKETS = (1, 2, 3, 3.5, 4, 5, 7.5, 10, 15, 30, 60, 300)


def collect() -> Iterable[Metric]:
    last = InboundMessage.objects.filter(bundle=OuterRef("pk")).order_by("-received_at").values("received_at")[:1]
    bundles = InboundBundle.objects.annotate(last_message_at=Subquery(last)).filter(last_message_at__isnull=False)
    yield duration_histogram("lindy_debounce_delay_seconds",
                             "Seconds from a conversation's last inbound message to its bundle being claimed.",
                             bundles, "last_message_at", "heartbeat_at", BUCKETS)
