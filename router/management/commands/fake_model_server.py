"""Serve the fake model with latency (router.fake_model) on a port, for workers started with
LINDY_FAKE_MODEL_URL pointing at it: `manage.py fake_model_server --port 8765 --latency-ms 2000`."""

from django.conf import settings
from django.core.management.base import BaseCommand

from router.fake_model import FakeModelServer


class Command(BaseCommand):
    help = "Serve the Messages API with the offline rules' answers after a delay (benchmarks)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=0)
        parser.add_argument("--latency-ms", type=int, default=None, help="default: LINDY_FAKE_MODEL_LATENCY_MS")
        parser.add_argument("--rate-429", type=float, default=None)
        parser.add_argument("--rate-529", type=float, default=None)

    def handle(self, *args, port, latency_ms, rate_429, rate_529, **options):
        def given(value, default):
            return default if value is None else value

        server = FakeModelServer(latency_ms=max(given(latency_ms, settings.FAKE_MODEL_LATENCY_MS), 0),
                                 rate_429=given(rate_429, settings.FAKE_MODEL_429_RATE),
                                 rate_529=given(rate_529, settings.FAKE_MODEL_529_RATE), port=port)
        # The first line is what a caller reads to find the port.
        self.stdout.write(f"fake model on {server.url}")
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
