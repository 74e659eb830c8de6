"""gunicorn serves Lindy's WSGI app, in `make run` and in production alike: `gunicorn -c gunicorn.conf.py`.

Sync workers, one request each: the work that takes long (model calls, hydration, agent runs) is in
Celery, so a web request is short and a worker count from the CPUs is the whole tuning. A worker is
recycled after a bounded number of requests (jittered, so they do not all restart at once), and a
SIGHUP or SIGTERM lets requests in flight finish within the graceful timeout.
"""

import multiprocessing
from pathlib import Path

from lindy import env, prometheus_dir

ROOT = Path(__file__).resolve().parent

bind = [f"{env.text('WEB_HOST', '0.0.0.0')}:{env.integer('PORT', 8000, min=1, max=65535)}"]
workers = env.integer("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1, min=1, max=256)
threads = env.integer("WEB_THREADS", 1, min=1, max=64)  # above 1: gthread workers
timeout = env.integer("WEB_TIMEOUT", 60, min=1)  # a worker silent this long is killed and replaced
graceful_timeout = env.integer("WEB_GRACEFUL_TIMEOUT", 30, min=1)  # requests in flight finish on restart
keepalive = 5
max_requests = env.integer("WEB_MAX_REQUESTS", 2000, min=0)
max_requests_jitter = max_requests // 10
# The access log on stdout, one line a request with its duration and request id (lindy.logging).
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
errorlog = "-"
# Counters of every worker of this server go to one directory, summed at /metrics (prometheus_client's
# multiprocess mode); each server on a machine needs its own, emptied when it starts.
_metrics_dir = env.path("PROMETHEUS_MULTIPROC_DIR", env.path("LINDY_VAR_DIR", ROOT / "var") / "prometheus"
                        / f"web-{env.integer('PORT', 8000, min=1, max=65535)}")


def on_starting(server):
    prometheus_dir.prepare(_metrics_dir)


def child_exit(server, worker):
    prometheus_dir.worker_gone(worker.pid)
