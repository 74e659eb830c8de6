"""/metrics: the Prometheus page an operator scrapes.

Two sources. django-prometheus counts requests and database queries in the web processes (summed over
a gunicorn server's workers by prometheus_client's multiprocess mode, lindy.prometheus_dir). The
product's own lindy_* counters and histograms are computed from the product's records at scrape time,
by collectors each app registers in its AppConfig.ready: the work they count (a hydration run, a model
call, a validation) is done by Celery workers on any machine, and the database already holds one row
per piece of work, so any web process answers with the whole installation's figures, across restarts
and machines, with nothing to aggregate or lose. The cost is a few aggregate queries per scrape.

Readable with `Authorization: Bearer <METRICS_TOKEN>`, or from an address in METRICS_ALLOWED_NETWORKS;
401 otherwise.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import prometheus_client
from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from . import prometheus_dir

logger = logging.getLogger(__name__)

Collect = Callable[[], Iterable[Metric]]
_collectors: dict[str, Collect] = {}


def register(name: str, collect: Collect) -> None:
    """An app's lindy_* metrics: `collect()` yields prometheus_client metric families."""
    _collectors[name] = collect


class ProductCollector(Collector):
    def collect(self) -> Iterable[Metric]:
        for name, collect in sorted(_collectors.items()):
            try:
                yield from collect()
            except Exception:  # one failing source must not blank the page
                logger.exception("metrics: the %s collector failed", name)


def duration_histogram(name: str, documentation: str, rows: QuerySet, start: str, end: str,
                       buckets: tuple[float, ...], labels: dict[str, str] | None = None) -> HistogramMetricFamily:
    """A histogram of `end - start` (seconds) over the rows, counted by the database in one query."""
    rows = rows.annotate(_seconds=ExpressionWrapper(F(end) - F(start), output_field=DurationField()))
    aggregates: dict = {f"le{i}": Count("pk", filter=Q(_seconds__lte=timedelta(seconds=bound)))
                        for i, bound in enumerate(buckets)}
    found = rows.aggregate(count=Count("pk"), total=Sum("_seconds"), **aggregates)
    histogram = HistogramMetricFamily(name, documentation, labels=list(labels or {}))
    cumulative = [(f"{bound:g}", found[f"le{i}"]) for i, bound in enumerate(buckets)]
    total = found["total"] or timedelta(0)
    histogram.add_metric(list((labels or {}).values()), [*cumulative, ("+Inf", found["count"])],
                         sum_value=total.total_seconds())
    return histogram


def _queue_depths() -> Iterable[Metric]:
    """Messages waiting in each queue, as the broker counts them (Redis lists or the file broker)."""
    from celery import current_app
    from kombu.exceptions import ChannelError

    from . import queue

    gauge = GaugeMetricFamily("lindy_celery_queue_depth", "Messages waiting in each Celery queue.", labels=["queue"])
    with current_app.connection_for_read() as connection:
        channel: Any = connection.default_channel  # a kombu virtual channel: it counts a queue
        for name in queue.all_queues():
            try:
                depth = channel.queue_declare(queue=name, passive=True).message_count
            except ChannelError:  # never declared, or emptied and gone: nothing waits
                depth = 0
            gauge.add_metric([name], depth)
    yield gauge


register("queues", _queue_depths)


def _allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), token.encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network, strict=False) for network in settings.METRICS_ALLOWED_NETWORKS)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        response = HttpResponse("A bearer token (METRICS_TOKEN) or an internal address is required.\n",
                                status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if prometheus_dir.enabled():  # a gunicorn server: every worker's counters, summed
        from prometheus_client import multiprocess

        base = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(base)
    else:
        base = prometheus_client.REGISTRY
    product = prometheus_client.CollectorRegistry()
    product.register(ProductCollector())
    body = prometheus_client.generate_latest(base) + prometheus_client.generate_latest(product)
    return HttpResponse(body, content_type=prometheus_client.CONTENT_TYPE_LATEST)
