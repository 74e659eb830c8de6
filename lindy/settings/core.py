"""The core settings: files, debug, secrets and hosts, the installed apps and middleware, the
database, sign-in, static files and request bounds."""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from lindy import env
from lindy.secret_key import generated_secret_key, secret_key_weakness

# Every variable is read through lindy.env: typed, bounded, and listed in the README's
# configuration table (tests/lindy/test_settings_env.py holds the two to each other).

# --- Core: files, debug, secrets, hosts -----------------------------------------------------------
BASE_DIR = Path(__file__).resolve().parent.parent.parent
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
