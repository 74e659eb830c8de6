"""lindy_hydration_* : hydration runs by status, and how long the finished ones took. Registered in
HydrationConfig.ready."""

from collections.abc import Iterable

from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from lindy.metrics import duration_histogram

from .models import Run

BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800)


def collect() -> Iterable[Metric]:
    by_status = dict(Run.objects.values_list("status").annotate(n=Count("pk")).order_by())
    finished = CounterMetricFamily("lindy_hydration_runs", "Hydration runs that ended, by status.", labels=["status"])
    active = GaugeMetricFamily("lindy_hydration_runs_active", "Hydration runs queued or running now.", labels=["status"])
    for status in Run.Status:
        (active if status in Run.ACTIVE else finished).add_metric([status.value], by_status.get(status.value, 0))
    yield from (finished, active)
    yield duration_histogram(
        "lindy_hydration_run_duration_seconds", "How long finished hydration runs took, start to end.",
        Run.objects.filter(started_at__isnull=False, finished_at__isnull=False), "started_at", "finished_at", BUCKETS)
