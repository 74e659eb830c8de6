"""How Lindy runs: the cache, the broker and Celery's queues, the model keys, and operations
(metrics, logs, errors)."""

from lindy import env, structured_logs

from .core import TIME_ZONE, VAR_DIR, _sqlite

# --- Cache and broker ----------------------------------------------------------------------------
REDIS_URL = env.url("REDIS_URL", "", schemes=("redis", "rediss"))
CACHE_KEY_PREFIX = env.text("LINDY_CACHE_PREFIX", "lindy")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": CACHE_KEY_PREFIX,
            # An unreachable or hung Redis fails a cache call in seconds (callers degrade: see
            # lindy.outages) instead of holding the request until the client's default (none).
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
else:
    # File-based so web, worker and beat processes share it without a server.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
            "KEY_PREFIX": CACHE_KEY_PREFIX,
        }
    }

# Celery. The hard time limit stays well below the broker's visibility timeout so a task
# that runs long is killed before the broker hands it to another worker. (No global soft
# limit: a task that sets a shorter hard limit would then be refused by Celery.)
CELERY_TASK_TIME_LIMIT = env.integer("CELERY_TASK_TIME_LIMIT", 900, min=1)
CELERY_VISIBILITY_TIMEOUT = env.integer("CELERY_VISIBILITY_TIMEOUT", 3600, min=1)
if REDIS_URL:
    CELERY_BROKER_URL = env.text("CELERY_BROKER_URL", REDIS_URL)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, str | int] = {
        "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
        "socket_connect_timeout": 5,  # an enqueue to a hung broker fails (and degrades) instead of hanging
    }
else:
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = env.text("CELERY_BROKER_URL", "filesystem://")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "data_folder_processed": str(_broker_dir / "processed"),
        # Broadcast (pidbox) exchanges; kombu's default is ./control, in the working tree.
        "control_folder": str(_broker_dir / "control"),
        "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    }
# Queues: one per class of work, so the 3 s debounce never waits behind an agent run (10 min),
# a hydration (25 min) or an eval run (1 h). Every name derives from CELERY_QUEUE (the tests give
# each xdist worker its own): "<CELERY_QUEUE>.<class>"; tasks not listed use "<CELERY_QUEUE>"
# (heartbeat, beat ticks, attachments). The Procfile runs a worker per queue
# (`-Q ${CELERY_QUEUE:-lindy}.<class>`); lindy.queue.all_queues() lists them all.
# The channels queue only decides (the debounce check claims a bundle) and queues the hand-over;
# the hand-over runs the agent on its bundle, inline, so it is agent work (bundle_dispatch).
CELERY_TASK_DEFAULT_QUEUE = env.text("CELERY_QUEUE", "lindy")
LINDY_QUEUE_CLASSES: dict[str, list[str]] = {
    "channels": ["channels_app.tasks.debounce_fire", "channels_app.tasks.debounce_recover"],
    "agent": ["channels_app.tasks.bundle_dispatch", "agent.tasks.agent_run", "validator.tasks.agent_run",
              "agent.tasks.outbox_resume"],
    "hydration": ["hydration.tasks.hydrate"],
    "drafting": ["drafting.tasks.items_process", "drafting.tasks.item_process"],
    "evals": ["router.tasks.eval_run", "router.tasks.guardrails_check", "validator.tasks.eval_cell",
              "router.tasks.optimization_run", "drafting.tasks.learner_run", "drafting.tasks.learner_init_fetch",
              "drafting.tasks.learner_init_compose"],
}
CELERY_TASK_ROUTES = {
    task: {"queue": f"{CELERY_TASK_DEFAULT_QUEUE}.{kind}"} for kind, tasks in LINDY_QUEUE_CLASSES.items() for task in tasks
}
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# The model-bound queues' workers (Procfile: agent, hydration, evals, drafting) run Celery's threads
# pool, since a run mostly waits for the model; this many threads a process (README, "Throughput per
# worker"). SQLite has one writer at a time, so there a few threads (the rest would queue on its lock).
CELERY_WORKER_CONCURRENCY = env.integer("LINDY_WORKER_THREADS", 4 if _sqlite else 150, min=1, max=500)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env.flag("CELERY_TASK_ALWAYS_EAGER", False)
# Beat fires only while it holds a leader lock (lindy.beat), so a second beat never fires twice.
CELERY_BEAT_SCHEDULER = "lindy.beat:SingleBeatScheduler"
BEAT_LOCK_TTL_SECONDS = env.number("BEAT_LOCK_TTL_SECONDS", 30, min=3, max=600)
CELERY_TIMEZONE = TIME_ZONE

# Models. Without an API key every route is served by the offline provider:
# deterministic rules, so the product runs and demos with no network.
ANTHROPIC_API_KEY = env.text("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env.url("ANTHROPIC_BASE_URL", "") or None
ANTHROPIC_MAX_RETRIES = env.integer("ANTHROPIC_MAX_RETRIES", 3, min=0, max=20)
ANTHROPIC_TIMEOUT = env.number("ANTHROPIC_TIMEOUT", 60, min=0, min_inclusive=False)
MODEL_OFFLINE = env.flag("LINDY_MODEL_OFFLINE", not ANTHROPIC_API_KEY)
# Benchmarks: the offline rules answered over HTTP through the anthropic client after this delay
# (-1: off), with these shares of 429 and 529 answers (router.fake_model).
FAKE_MODEL_LATENCY_MS = env.integer("LINDY_FAKE_MODEL_LATENCY_MS", -1, min=-1, max=600_000)
FAKE_MODEL_429_RATE = env.number("LINDY_FAKE_MODEL_429_RATE", 0.0, min=0, max=1)
FAKE_MODEL_529_RATE = env.number("LINDY_FAKE_MODEL_529_RATE", 0.0, min=0, max=1)
FAKE_MODEL_URL = env.url("LINDY_FAKE_MODEL_URL", "")

API_TOKEN_PREFIX = "lindy_"

# --- Operations: metrics, logs, errors ------------------------------------------------------------
# /metrics (lindy.metrics) answers a bearer token or these networks (REMOTE_ADDR: behind a proxy, the
# proxy's address, so list only networks whose every client may read it); 401 to anyone else.
METRICS_TOKEN = env.text("METRICS_TOKEN")
METRICS_ALLOWED_NETWORKS = env.network_list("METRICS_ALLOWED_NETWORKS")

LOG_FORMAT = env.choice("LOG_FORMAT", "json", ("json", "console"))
LOGGING = structured_logs.logging_config(level=env.choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR",
                                                                              "CRITICAL")),
                                         json=LOG_FORMAT == "json")
structured_logs.configure()
# The request id follows the work into the Celery tasks a request queues (task headers).
DJANGO_STRUCTLOG_CELERY_ENABLED = True
DJANGO_STRUCTLOG_IP_LOGGING_ENABLED = False
# Errors go to Sentry when a DSN is set: Django's and Celery's, without personal data.
SENTRY_DSN = env.text("SENTRY_DSN")
if SENTRY_DSN:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(dsn=SENTRY_DSN, integrations=[DjangoIntegration(), CeleryIntegration()], send_default_pii=False,
                    environment=env.text("SENTRY_ENVIRONMENT", "production"),
                    traces_sample_rate=env.number("SENTRY_TRACES_SAMPLE_RATE", 0.0, min=0, max=1))
