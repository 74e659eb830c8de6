"""Lindy settings, read from the environment.

With no environment at all the product runs on embedded defaults: SQLite and a
file-system Celery broker under var/, the offline model provider, DEBUG on.
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from lindy import env, structured_logs
from lindy.secret_key import generated_secret_key, secret_key_weakness

# Every variable is read through lindy.env: typed, bounded, and listed in the README's
# configuration table (tests/lindy/test_settings_env.py holds the two to each other).

# --- Core: files, debug, secrets, hosts -----------------------------------------------------------
BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env.path("LINDY_VAR_DIR", BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.flag("DEBUG", True)

SECRET_KEY = env.text("SECRET_KEY")
ALLOWED_HOSTS = env.text_list("ALLOWED_HOSTS")
# The site's public origin (scheme, host, port, no path): links in emails and Slack posts that leave
# the site (ratio alerts...) are absolute, built on it (lindy.links.absolute_url).
LINDY_BASE_URL = env.url("LINDY_BASE_URL", "http://localhost:8000").rstrip("/")
if DEBUG:
    # Never a public constant: it also keys the stored tokens' encryption (lindy.encryption).
    SECRET_KEY = SECRET_KEY or generated_secret_key(VAR_DIR)
    ALLOWED_HOSTS = ALLOWED_HOSTS or ["localhost", "127.0.0.1", "[::1]", "testserver"]
else:
    missing = [name for name, value in (("SECRET_KEY", SECRET_KEY), ("ALLOWED_HOSTS", ALLOWED_HOSTS)) if not value]
    if missing:
        raise ImproperlyConfigured(
            f"DEBUG is off, so these environment variables are required: {', '.join(missing)}"
        )
    if weakness := secret_key_weakness(SECRET_KEY):
        raise ImproperlyConfigured(f"DEBUG is off and {weakness}: generate one with `python -c \"import secrets; print(secrets.token_urlsafe(64))\"`")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.integer("SECURE_HSTS_SECONDS", 31536000, min=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_SSL_REDIRECT = env.flag("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    CSRF_TRUSTED_ORIGINS = env.text_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.humanize",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "django_celery_beat",
    "django_prometheus",
    "django_structlog",
    "lindy",
    "router",
    "memory",
    "google_workspace",
    "hydration",
    "validator",
    "channels_app",
    "analyst",
    "agent",
    "drafting",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "lindy.middleware.bounded_json_bodies",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_structlog.middlewares.RequestMiddleware",
    "lindy.structured_logs.RouteMiddleware",
    "lindy.middleware.large_form_bodies",
    "django.contrib.messages.middleware.MessageMiddleware",
    "lindy.middleware.styled_error_pages",
    "lindy.middleware.htmx_messages",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "lindy.middleware.bad_parameters",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "lindy.urls"
WSGI_APPLICATION = "lindy.wsgi.application"
ASGI_APPLICATION = "lindy.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "lindy.context_processors.navigation",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    },
]

# --- Database ------------------------------------------------------------------------------------
_database_url = env.text("DATABASE_URL")
try:
    _database = dj_database_url.parse(_database_url or f"sqlite:///{VAR_DIR / 'lindy.sqlite3'}",
                                      conn_max_age=env.integer("DB_CONN_MAX_AGE", 60, min=0), conn_health_checks=True)
except ValueError:  # the URL may hold a password: never echoed
    raise ImproperlyConfigured("DATABASE_URL is invalid: expected a URL such as postgres://user@host:5432/name "
                               "or sqlite:///path") from None
DATABASES = {"default": _database}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, five workers and beat share the file. WAL lets readers go on while one process writes;
    # the busy timeout makes a writer wait for the lock instead of failing with "database is
    # locked"; IMMEDIATE takes the write lock when a transaction starts, so two writers queue
    # instead of one failing when it upgrades a read to a write.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
    })
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, so a real Celery worker in a test sees the same database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
elif (_pool_size := env.integer("DB_POOL_MAX_SIZE", 0, min=0, max=1000)):
    # psycopg's pool, at most this many connections a process (Django's pool replaces persistent
    # connections: CONN_MAX_AGE must be 0). Off by default; the Procfile's threaded workers set 20, so
    # their 50 threads (and heartbeats) share 20 connections (README, "Throughput per worker").
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": _pool_size, "timeout": 600}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
_sqlite = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
# django-prometheus's wrapper of the same backend counts queries and errors for /metrics.
DATABASES["default"]["ENGINE"] = DATABASES["default"]["ENGINE"].replace("django.db.backends.",
                                                                        "django_prometheus.db.backends.")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "lindy.User"
if env.flag("LINDY_FAST_PASSWORD_HASHER", False):
    # Tests only: the default hasher costs ~0.3 s a user by design.
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# WhiteNoise serves static files in every mode (the runserver in the Procfile serves none with
# DEBUG off) and finds them where the apps keep them, so `DEBUG=0` needs no collectstatic step.
WHITENOISE_USE_FINDERS = True

# JSON bodies (the API, webhooks) are refused before parsing beyond this size (413) or nesting depth
# (400): lindy.json_input. 2 MB holds the largest documented field, a meeting's 500,000-character
# notes, in UTF-8.
JSON_BODY_MAX_BYTES = env.integer("JSON_BODY_MAX_BYTES", 2 * 1024 * 1024, min=1024)
JSON_MAX_DEPTH = env.integer("JSON_MAX_DEPTH", 64, min=1, max=10_000)
# Any request body (forms too) larger than this is refused before a view reads it: the same bound.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.integer("DATA_UPLOAD_MAX_MEMORY_SIZE", JSON_BODY_MAX_BYTES, min=1024)
# Except a form POSTed to a view marked lindy.middleware.accepts_large_form (the memory editor):
# read up to this bound, so the view refuses an oversized paste in its own form, the text kept.
LARGE_FORM_MAX_BYTES = env.integer("LARGE_FORM_MAX_BYTES", 16 * 1024 * 1024, min=1024)

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
CELERY_WORKER_CONCURRENCY = env.integer("LINDY_WORKER_THREADS", 4 if _sqlite else 50, min=1, max=500)
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

# Seams between apps, as dotted paths so each side can land first.
# channels_app hands a debounced bundle of inbound messages to the agent:
#   handle_inbound(*, user, channel: str, conversation_ref: str, messages: list[dict]) -> AgentTask
LINDY_INBOUND_HANDLER = env.dotted_path("LINDY_INBOUND_HANDLER", "agent.services.handle_inbound")
# The agent's exempt user-only tools (reply_to_user, send_sms_to_user) send through channels:
#   user_message_send(*, user, body: str, channel: str | None = None) -> dict
LINDY_USER_MESSAGE_SENDER = env.dotted_path("LINDY_USER_MESSAGE_SENDER", "channels_app.services.user_message_send")

# Router (model routing, rollouts, cost).
# Share of rollout calls whose request and answer are kept for the online judge.
ROUTER_ONLINE_EVAL_SAMPLE_RATE = env.number("ROUTER_ONLINE_EVAL_SAMPLE_RATE", 0.1, min=0, max=1)
# Samples the guardrail job sends to the judge route per run, per rollout.
ROUTER_ONLINE_EVAL_BATCH = env.integer("ROUTER_ONLINE_EVAL_BATCH", 20, min=1)
ROUTER_GUARDRAIL_EVERY_SECONDS = env.integer("ROUTER_GUARDRAIL_EVERY_SECONDS", 900, min=1)
# A running prompt optimization beats from a thread this often; a heartbeat older than the stale
# window means its worker died (a redelivery takes over, the recovery sweep queues it again). Worst
# case from a killed worker to its run queued again: stale + sweep period (45 s), under a minute.
ROUTER_OPTIMIZE_HEARTBEAT_SECONDS = env.number("ROUTER_OPTIMIZE_HEARTBEAT_SECONDS", 10, min=0, min_inclusive=False)
ROUTER_OPTIMIZE_STALE_SECONDS = env.number("ROUTER_OPTIMIZE_STALE_SECONDS", 30, min=0, min_inclusive=False)
ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS = env.integer("ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS", 15, min=1)
ROUTER_OPTIMIZE_MAX_ATTEMPTS = env.integer("ROUTER_OPTIMIZE_MAX_ATTEMPTS", 3, min=1)
# The guardrail aggregates count only calls this recent (a rollout's stage lasts hours to days).
ROUTER_GUARDRAIL_WINDOW_DAYS = env.integer("ROUTER_GUARDRAIL_WINDOW_DAYS", 30, min=1)
# The guardrails' always-valid sequential test (router.sequential): the sample size per look
# where it is tightest, and the p-value below which a sample-ratio mismatch flags bucketing.
ROUTER_GUARDRAIL_SEQUENTIAL_TUNING = env.number("ROUTER_GUARDRAIL_SEQUENTIAL_TUNING", 500, min=0, min_inclusive=False)
ROUTER_GUARDRAIL_SRM_P = env.number("ROUTER_GUARDRAIL_SRM_P", 0.001, min=0, max=1, min_inclusive=False)
# Voice memos on a route whose target takes no audio use this OpenAI-compatible target (by name);
# empty: the first OpenAI-compatible target whose model is a speech model (router.gateway.speech_target).
ROUTER_SPEECH_TARGET = env.text("ROUTER_SPEECH_TARGET", "")
# Offline evidence before a rollout starts (router.services.evidence): the candidate's latest
# finished eval of the route must score at least this, with at most this share of errored cases,
# and be no worse than the baseline's latest eval by more than the margin.
ROUTER_EVAL_MIN_SCORE = env.number("ROUTER_EVAL_MIN_SCORE", 0.75, min=0, max=1)
ROUTER_EVAL_MAX_ERROR_RATE = env.number("ROUTER_EVAL_MAX_ERROR_RATE", 0.0, min=0, max=1)
ROUTER_EVAL_BASELINE_MARGIN = env.number("ROUTER_EVAL_BASELINE_MARGIN", 0.02, min=0, max=1)
# Provider budgets (router.budgets), shared by all workers through Redis: requests and tokens
# per minute per provider (by host name, else provider kind; "default" for the rest). Generous
# defaults; set a provider's to its account's real limits. The offline provider is unlimited.
ROUTER_PROVIDER_BUDGETS: dict[str, dict[str, int]] = {
    "default": {"rpm": env.integer("ROUTER_DEFAULT_RPM", 4000, min=0),
                "tpm": env.integer("ROUTER_DEFAULT_TPM", 2_000_000, min=0)},
}
# Calls in flight per route (0 or absent: no limit), and when a killed worker's slot frees itself.
ROUTER_ROUTE_CONCURRENCY: dict[str, int] = {}
ROUTER_ROUTE_SLOT_EXPIRY_SECONDS = env.integer("ROUTER_ROUTE_SLOT_EXPIRY_SECONDS", 600, min=1)
# An interactive call (agent, validator) waits this long for budget, then fails with a ModelError.
ROUTER_BUDGET_INTERACTIVE_WAIT_SECONDS = env.number("ROUTER_BUDGET_INTERACTIVE_WAIT_SECONDS", 3, min=0)

# memory: default token budgets of a new file system (each file system can change its own).
# Per file: every file but index.md and master.md. Always loaded: index.md + master.md together.
MEMORY_FILE_TOKEN_BUDGET = env.integer("MEMORY_FILE_TOKEN_BUDGET", 8_000, min=1)
MEMORY_ALWAYS_LOADED_TOKEN_BUDGET = env.integer("MEMORY_ALWAYS_LOADED_TOKEN_BUDGET", 24_000, min=1)

# validator (and the agent loop in lindy/agent.py)
# A user's messages on one channel conversation feed the same task until it has been idle this long.
LINDY_AGENT_CONVERSATION_IDLE_HOURS = env.integer("LINDY_AGENT_CONVERSATION_IDLE_HOURS", 12, min=1)
# Photos the user texted in this many days (the newest LIMIT of them) are shown to the model on
# every run, so "the receipt I sent Monday" can be looked at after the conversation's task changed.
LINDY_AGENT_PHOTO_DAYS = env.integer("LINDY_AGENT_PHOTO_DAYS", 14, min=0)
LINDY_AGENT_PHOTO_LIMIT = env.integer("LINDY_AGENT_PHOTO_LIMIT", 4, min=0)

# drafting's learner (drafting/learner): the adaptive cadence and the gate.
# A user's run fires when they have this many new meaningful draft/sent pairs (checked hourly)...
LINDY_LEARNER_PAIRS_PER_RUN = env.integer("LINDY_LEARNER_PAIRS_PER_RUN", 4, min=1)
# ...or, with at least one, once this many hours passed since their last run (the floor)...
LINDY_LEARNER_FLOOR_HOURS = env.integer("LINDY_LEARNER_FLOOR_HOURS", 24, min=1)
# ...and never more than this many runs in 24 hours (the ceiling).
LINDY_LEARNER_MAX_RUNS_PER_DAY = env.integer("LINDY_LEARNER_MAX_RUNS_PER_DAY", 3, min=0)
# The gate: one-sided sign test at this alpha, on at least this many decided comparisons.
LINDY_LEARNER_ALPHA = env.number("LINDY_LEARNER_ALPHA", 0.1, min=0, max=1, min_inclusive=False)
LINDY_LEARNER_MIN_DECIDED = env.integer("LINDY_LEARNER_MIN_DECIDED", 5, min=1)
# Held-out pairs (or historical threads) replayed and judged per proposal; new pairs read per run.
LINDY_LEARNER_EVAL_PAIRS = env.integer("LINDY_LEARNER_EVAL_PAIRS", 30, min=1)
LINDY_LEARNER_MAX_NEW_PAIRS = env.integer("LINDY_LEARNER_MAX_NEW_PAIRS", 24, min=1)

# Email (ratio alerts to support): SMTP when EMAIL_HOST is set, else printed to the console.
EMAIL_HOST = env.text("EMAIL_HOST")
EMAIL_PORT = env.integer("EMAIL_PORT", 587, min=1, max=65535)
EMAIL_HOST_USER = env.text("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env.text("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env.flag("EMAIL_USE_TLS", True)
EMAIL_BACKEND = env.dotted_path("EMAIL_BACKEND", "") or (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = env.text("DEFAULT_FROM_EMAIL", "Lindy <lindy@localhost>")

# --- channels_app: Slack, iMessage (managed API) and SMS ---------------------------------------
# An integration whose secret is unset rejects every request to its endpoint.
SLACK_SIGNING_SECRET = env.text("SLACK_SIGNING_SECRET")
SLACK_CLIENT_ID = env.text("SLACK_CLIENT_ID")
SLACK_CLIENT_SECRET = env.text("SLACK_CLIENT_SECRET")
SLACK_API_BASE_URL = env.url("SLACK_API_BASE_URL", "https://slack.com/api/")
# Seconds any Slack Web API call may take (lindy.slack_client.web_client: channels, hydration, tools).
SLACK_HTTP_TIMEOUT = env.number("SLACK_HTTP_TIMEOUT", 15, min=0, min_inclusive=False)
SLACK_AUTHORIZE_URL = env.url("SLACK_AUTHORIZE_URL", "https://slack.com/oauth/v2/authorize")
SLACK_BOT_SCOPES = env.text_list(
    "SLACK_BOT_SCOPES", "channels:read,groups:read,channels:history,groups:history,users:read,users:read.email"
)
LINQ_API_TOKEN = env.text("LINQ_API_TOKEN")
LINQ_WEBHOOK_SECRET = env.text("LINQ_WEBHOOK_SECRET")
# How the provider signs its webhooks: "hmac" (X-Webhook-Timestamp/-Signature, hex HMAC-SHA256) or
# "standard" (Standard Webhooks: webhook-id/-timestamp/-signature, LINQ_WEBHOOK_SECRET = "whsec_...").
LINQ_WEBHOOK_SCHEME = env.choice("LINQ_WEBHOOK_SCHEME", "hmac", ("hmac", "standard"))
LINQ_BASE_URL = env.url("LINQ_BASE_URL", "https://api.linqapp.com/api/partner")
LINQ_TIMEOUT = env.number("LINQ_TIMEOUT", 10, min=0, min_inclusive=False)
TWILIO_ACCOUNT_SID = env.text("TWILIO_ACCOUNT_SID")
TWILIO_AUTH_TOKEN = env.text("TWILIO_AUTH_TOKEN")
TWILIO_API_BASE_URL = env.url("TWILIO_API_BASE_URL", "")  # empty: Twilio's own hosts
# Behind a proxy Twilio signs the public URL it called: set this to that URL's origin.
TWILIO_WEBHOOK_PUBLIC_BASE = env.url("TWILIO_WEBHOOK_PUBLIC_BASE", "")
WEBHOOK_MAX_AGE_SECONDS = env.integer("WEBHOOK_MAX_AGE_SECONDS", 300, min=1)
CHANNELS_DEBOUNCE_SECONDS = env.number("CHANNELS_DEBOUNCE_SECONDS", 3, min=0)
# A claimed bundle whose dispatch has not finished after this long is handed out again.
CHANNELS_DISPATCH_LEASE_SECONDS = env.integer("CHANNELS_DISPATCH_LEASE_SECONDS", 600, min=1)
CHANNELS_RATIO_WARN = env.number("CHANNELS_RATIO_WARN", 2, min=0, min_inclusive=False)
CHANNELS_RATIO_CRITICAL = env.number("CHANNELS_RATIO_CRITICAL", 10, min=0, min_inclusive=False)
# A send within this many seconds of the user's last text is a reply: it goes even from a line over
# the critical ratio (channels_app.services.gate); anything later is unprompted.
CHANNELS_REPLY_WINDOW_SECONDS = env.integer("CHANNELS_REPLY_WINDOW_SECONDS", 1800, min=0)
# Ratio alerts are emailed to support staff (users with is_support) and these addresses, and posted
# to this Slack channel with this bot token (an ops workspace's; both unset: no Slack post).
CHANNELS_ALERT_EMAILS = env.text_list("CHANNELS_ALERT_EMAILS")
CHANNELS_ALERT_SLACK_TOKEN = env.text("CHANNELS_ALERT_SLACK_TOKEN")
CHANNELS_ALERT_SLACK_CHANNEL = env.text("CHANNELS_ALERT_SLACK_CHANNEL")
CHANNELS_CAPABILITY_TTL_DAYS = env.integer("CHANNELS_CAPABILITY_TTL_DAYS", 7, min=1)
CHANNELS_MEDIA_ROOT = env.path("CHANNELS_MEDIA_ROOT", VAR_DIR / "media" / "channels")
CHANNELS_MAX_ATTACHMENT_BYTES = env.integer("CHANNELS_MAX_ATTACHMENT_BYTES", 20 * 1024 * 1024, min=1)

# --- hydration: sources, summarizer and memory agent, every 12 hours ------------------------------
HYDRATION_INTERVAL_SECONDS = env.integer("HYDRATION_INTERVAL_SECONDS", 12 * 3600, min=60)
# A live run whose worker stops renewing this lease is considered dead; keep it above the task's time limit.
HYDRATION_RUN_LEASE_SECONDS = env.integer("HYDRATION_RUN_LEASE_SECONDS", 1800, min=1)
HYDRATION_SUMMARIZER_INPUT_TOKENS = env.integer("HYDRATION_SUMMARIZER_INPUT_TOKENS", 150_000, min=1000)
HYDRATION_MAX_ITEMS_PER_RUN = env.integer("HYDRATION_MAX_ITEMS_PER_RUN", 2000, min=1)
HYDRATION_AGENT_MAX_STEPS = env.integer("HYDRATION_AGENT_MAX_STEPS", 40, min=1)
HYDRATION_VERIFIER_ROUNDS = env.integer("HYDRATION_VERIFIER_ROUNDS", 3, min=1)
# An item a passing memory agent wrote none of the facts of is kept for the next run; left out this
# many runs, it is dropped (saying so), so no item is retried forever.
HYDRATION_ITEM_MAX_TRIES = env.integer("HYDRATION_ITEM_MAX_TRIES", 3, min=1)
# A running run's worker refreshes its heartbeat this often (a thread, so even a long model call
# beats); a heartbeat older than the stale window means the worker is dead: a redelivery takes the
# run over at once, and the recovery sweep (hydration.tasks.recover) queues it again. The worst
# case from a killed worker to its run queued again is stale + sweep period (45 s): keep it under
# the minute the issue promises, and the stale window at three beats or more.
HYDRATION_HEARTBEAT_SECONDS = env.number("HYDRATION_HEARTBEAT_SECONDS", 10, min=0, min_inclusive=False)
HYDRATION_HEARTBEAT_STALE_SECONDS = env.number("HYDRATION_HEARTBEAT_STALE_SECONDS", 30, min=0, min_inclusive=False)
HYDRATION_RECOVER_EVERY_SECONDS = env.integer("HYDRATION_RECOVER_EVERY_SECONDS", 15, min=1)
# The dispatch tick: rows claimed per transaction, and at most this many batches per tick
# (1,000 × 50 per minute is far above the ~23 runs/s of 1,000,000 file systems every 12 h).
HYDRATION_DISPATCH_BATCH = env.integer("HYDRATION_DISPATCH_BATCH", 1000, min=1)
HYDRATION_DISPATCH_MAX_BATCHES = env.integer("HYDRATION_DISPATCH_MAX_BATCHES", 50, min=1)
# A run taken over this many times (its worker died each time) is given up; its items stay for the next run.
HYDRATION_RUN_MAX_ATTEMPTS = env.integer("HYDRATION_RUN_MAX_ATTEMPTS", 3, min=1)
# Gmail calls (Slack calls use SLACK_HTTP_TIMEOUT).
HYDRATION_HTTP_TIMEOUT = env.number("HYDRATION_HTTP_TIMEOUT", 20, min=0, min_inclusive=False)
HYDRATION_SLACK_MAX_RETRIES = env.integer("HYDRATION_SLACK_MAX_RETRIES", 3, min=0)
GMAIL_CLIENT_ID = env.text("GMAIL_CLIENT_ID")
GMAIL_CLIENT_SECRET = env.text("GMAIL_CLIENT_SECRET")
GMAIL_API_BASE_URL = env.url("GMAIL_API_BASE_URL", "https://gmail.googleapis.com")
GOOGLE_OAUTH_AUTHORIZE_URL = env.url("GOOGLE_OAUTH_AUTHORIZE_URL", "https://accounts.google.com/o/oauth2/v2/auth")
GOOGLE_OAUTH_TOKEN_URL = env.url("GOOGLE_OAUTH_TOKEN_URL", "https://oauth2.googleapis.com/token")

# How many cells of a validator eval matrix run at once (each makes one model call per case).
VALIDATOR_EVAL_CONCURRENCY = env.integer("VALIDATOR_EVAL_CONCURRENCY", 2, min=1)
# Validator V2: the verdict also assesses quality (advisory; it never flips a safety block).
VALIDATOR_QUALITY = env.flag("VALIDATOR_QUALITY", True)
# Block-rate anomalies (validator.anomalies): the hourly job's window, trailing baseline and the
# per-test false-alarm rate of its one-sided exact binomial test.
VALIDATOR_ANOMALY_WINDOW_HOURS = env.integer("VALIDATOR_ANOMALY_WINDOW_HOURS", 1, min=1)
VALIDATOR_ANOMALY_BASELINE_HOURS = env.integer("VALIDATOR_ANOMALY_BASELINE_HOURS", 168, min=1)
VALIDATOR_ANOMALY_ALPHA = env.number("VALIDATOR_ANOMALY_ALPHA", 1e-6, min=0, max=1, min_inclusive=False)
GOOGLE_CALENDAR_API_BASE_URL = env.url("GOOGLE_CALENDAR_API_BASE_URL", "https://www.googleapis.com")
# Live Gmail/Calendar actions: each HTTP call's timeout, and the time one action may spend retrying
# 429/5xx answers (honouring Retry-After) before it is left "not confirmed" for the resume sweep.
LINDY_ACTION_HTTP_TIMEOUT = env.number("LINDY_ACTION_HTTP_TIMEOUT", 20, min=0, min_inclusive=False)
LINDY_ACTION_RETRY_BUDGET_SECONDS = env.number("LINDY_ACTION_RETRY_BUDGET_SECONDS", 30, min=0)
LINDY_ACTION_MAX_TRIES = env.integer("LINDY_ACTION_MAX_TRIES", 5, min=1)
# A live action still "not confirmed" this long after its last attempt is resumed (checked with the
# provider first, then done) by agent.tasks.outbox_resume.
LINDY_ACTION_RESUME_AFTER_SECONDS = env.integer("LINDY_ACTION_RESUME_AFTER_SECONDS", 300, min=1)
# ... and one still not confirmed this long after it was asked for is only looked for, never done.
LINDY_ACTION_GIVE_UP_HOURS = env.integer("LINDY_ACTION_GIVE_UP_HOURS", 24, min=1)

# Email drafting (drafting/). A draft-sent pair below the heavy-edit threshold was heavily edited;
# below the (looser) meaningful threshold it differs enough to learn from. Inbound mail older
# than the lookback (e.g. a first hydration's backlog) gets no draft.
LINDY_DRAFTING_ENABLED = env.flag("LINDY_DRAFTING_ENABLED", True)
LINDY_DRAFT_HEAVY_EDIT_THRESHOLD = env.number("LINDY_DRAFT_HEAVY_EDIT_THRESHOLD", 0.7, min=0, max=1)
LINDY_DRAFT_MEANINGFUL_THRESHOLD = env.number("LINDY_DRAFT_MEANINGFUL_THRESHOLD", 0.95, min=0, max=1)
LINDY_DRAFT_LOOKBACK_HOURS = env.integer("LINDY_DRAFT_LOOKBACK_HOURS", 48, min=1)
LINDY_DRAFT_SWEEP_SECONDS = env.integer("LINDY_DRAFT_SWEEP_SECONDS", 900, min=1)

# Failures (lindy.failures, grouped by the analyst). The version a failure is seen in: LINDY_VERSION
# when set, else the git commit of the running code, else the release string.
LINDY_VERSION = env.text("LINDY_VERSION", "")
LINDY_RELEASE = env.text("LINDY_RELEASE", "lindy-dev")
# A new or regressed failure group that hits more than this many users in an hour alerts (once per episode).
ANALYST_FAILURE_ALERT_USERS = env.integer("ANALYST_FAILURE_ALERT_USERS", 3, min=0)
# "File issue" on a failure group: the repository (owner/name) and a token that may create issues.
ANALYST_GITHUB_REPO = env.text("ANALYST_GITHUB_REPO", "")
ANALYST_GITHUB_TOKEN = env.text("ANALYST_GITHUB_TOKEN", "")
ANALYST_GITHUB_API_URL = env.url("ANALYST_GITHUB_API_URL", "https://api.github.com")
