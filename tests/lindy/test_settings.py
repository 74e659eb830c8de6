"""Settings come from the environment; production refuses to start half-configured."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = secrets.token_urlsafe(64)


def _load_settings(tmp_path, **env):
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "ANTHROPIC_API_KEY", "LINDY_MODEL_OFFLINE"}}
    clean.update(env, LINDY_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="lindy.settings")
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL.split(':')[0], s.MODEL_OFFLINE, s.DEBUG, "
        "s.CACHES['default']['BACKEND'].rsplit('.', 1)[-1], getattr(s, 'SECURE_HSTS_SECONDS', 0), getattr(s, 'SESSION_COOKIE_SECURE', False))"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60)


def test_no_environment_means_embedded_defaults(tmp_path):
    result = _load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    engine, broker, offline, debug, cache, hsts, secure = result.stdout.split()
    assert engine == "django_prometheus.db.backends.sqlite3" and broker == "filesystem"
    assert offline == "True" and debug == "True" and cache == "FileBasedCache"
    assert (tmp_path / "var" / "broker" / "queue").is_dir()


def test_urls_switch_database_broker_cache_and_model(tmp_path):
    result = _load_settings(
        tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/lindy", REDIS_URL="redis://127.0.0.1:6379/0",
        ANTHROPIC_API_KEY="sk-test",
    )
    assert result.returncode == 0, result.stderr
    engine, broker, offline, _, cache, _, _ = result.stdout.split()
    assert engine == "django_prometheus.db.backends.postgresql" and broker == "redis"
    assert offline == "False" and cache == "RedisCache"


def test_production_requires_secret_key_and_allowed_hosts(tmp_path):
    result = _load_settings(tmp_path, DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr and "ALLOWED_HOSTS" in result.stderr


def test_production_is_secure_when_configured(tmp_path):
    result = _load_settings(tmp_path, DEBUG="0", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="lindy.example.com")
    assert result.returncode == 0, result.stderr
    _, _, _, debug, _, hsts, secure = result.stdout.split()
    assert debug == "False" and int(hsts) > 0 and secure == "True"


@pytest.mark.parametrize("key, reason", [
    ("k" * 49, "49 characters"),
    ("Xq7-pL2vR9sK4mW8tY3nB6hJ1cF5dG0aZ", "characters; at least 50"),  # fixed: xdist workers collect alike
    ("changeme", "known placeholder"),
    ("Change-Me", "known placeholder"),
    ("your-secret-key-here", "known placeholder"),
    ("django-insecure-" + "w4Nq8Zr2Lx6Tb0Vm3Kc7Hs1Pd5Gy9Fj2Ae6Ru4Io8Ul0Ek3Wn7Xo1Yq5", "known placeholder"),
    ("ab" * 40, "fewer than 5 distinct"),
    # An attacker's guesses that passed the length and variety checks: a placeholder said again, a
    # short run repeated, a placeholder behind a space.
    ("changeme" * 7, "known placeholder, repeated"),
    ("Secret-Key-" * 5, "known placeholder, repeated"),
    ("0123456789" * 5, "repeats a stretch shorter than 25"),
    (" django-insecure-" + "w4Nq8Zr2Lx6Tb0Vm3Kc7Hs1Pd5Gy9Fj2Ae6Ru4Io8Ul0Ek3Wn7Xo1Yq5", "known placeholder"),
])
def test_production_refuses_a_weak_secret_key(tmp_path, key, reason):
    """With DEBUG=0 a short, placeholder or low-variety SECRET_KEY stops start-up (ImproperlyConfigured)."""
    result = _load_settings(tmp_path, DEBUG="0", SECRET_KEY=key, ALLOWED_HOSTS="lindy.example.com")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and reason in result.stderr
    assert key not in result.stderr  # the message never prints the key itself


def test_a_weak_key_is_tolerated_with_debug_on(tmp_path):
    result = _load_settings(tmp_path, DEBUG="1", SECRET_KEY="changeme")
    assert result.returncode == 0, result.stderr


def _run_with_settings(tmp_path, code: str, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    clean.update(env, LINDY_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="lindy.settings")
    return subprocess.run([sys.executable, "-c", "import django; django.setup(); " + code], cwd=ROOT, env=clean,
                          capture_output=True, text=True, timeout=60)


def test_without_secret_key_one_is_generated_into_var_and_reused(tmp_path):
    """Two starts with no SECRET_KEY share one generated key, so a token encrypted by the first
    decrypts in the second; the key is private to the owner and never the old public constant."""
    first = _run_with_settings(
        tmp_path, "from django.conf import settings; from lindy.encryption import encrypt; "
                  "print(settings.SECRET_KEY); print(encrypt('xoxb-secret-token'))")
    assert first.returncode == 0, first.stderr
    key, token = first.stdout.split()
    second = _run_with_settings(
        tmp_path, f"from django.conf import settings; from lindy.encryption import decrypt; "
                  f"print(settings.SECRET_KEY); print(decrypt({token!r}))")
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == [key, "xoxb-secret-token"]
    assert "insecure" not in key and len(key) >= 50
    key_file = tmp_path / "var" / "secret_key"
    assert key_file.read_text().strip() == key
    assert key_file.stat().st_mode & 0o777 == 0o600
    other = _run_with_settings(tmp_path / "elsewhere", "from django.conf import settings; print(settings.SECRET_KEY)")
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() != key  # generated per installation, not a constant


def test_a_secret_key_from_the_environment_wins_and_nothing_is_written(tmp_path):
    result = _run_with_settings(tmp_path, "from django.conf import settings; print(settings.SECRET_KEY)",
                                SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "k" * 50
    assert not (tmp_path / "var" / "secret_key").exists()


def test_static_files_are_served_with_debug_off_without_collectstatic(tmp_path):
    """A fresh var/ (nothing collected) and DEBUG=0: the app's own assets and the vendored CSS answer 200."""
    code = ("from django.test import Client; c = Client(); "
            "print(*[c.get(p, secure=True).status_code for p in "
            "('/static/router/charts.js', '/static/vendor/pico/pico.min.css', '/static/nothing-here.js')])")
    result = _run_with_settings(tmp_path, code, DEBUG="0", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="testserver")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["200", "200", "404"]
    assert not any((tmp_path / "var" / "staticfiles").iterdir())
