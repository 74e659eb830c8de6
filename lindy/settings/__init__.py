"""Lindy settings, read from the environment, by concern: the core (core.py: files, secrets,
apps, database, sign-in), how it runs (runtime.py: cache, broker, Celery, model keys, metrics,
logs, errors) and each app's own settings (per_app.py).

With no environment at all the product runs on embedded defaults: SQLite and a
file-system Celery broker under var/, the offline model provider, DEBUG on.

Every variable is read through lindy.env: typed, bounded, and listed in the README's
configuration table (tests/lindy/test_settings_env.py holds the two to each other).
"""

from .core import *  # noqa: F403
from .per_app import *  # noqa: F403
from .runtime import *  # noqa: F403
