"""Typed settings: every variable is parsed with its type and bounds, a bad one stops start-up in one
line naming it, and the README's configuration table lists exactly the variables that are read."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The files that read the environment for the product's processes, all through lindy.env.
READERS = [*sorted((ROOT / "lindy" / "settings").glob("*.py")), ROOT / "gunicorn.conf.py"]


def _names_read(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "env"):
            first = node.args[0]
            assert isinstance(first, ast.Constant), f"{path.name}: env.{node.func.attr} with a computed name"
            names.add(first.value)
    return names


def _names_in_readme_table() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_<>]*)`", first_cell))
    return names


def test_settings_read_the_environment_only_through_lindy_env():
    for path in READERS:
        source = path.read_text()
        assert "os.environ" not in source and "getenv" not in source, path.name


def test_every_variable_read_is_in_the_readme_table_and_every_variable_there_is_read():
    read = set().union(*(_names_read(path) for path in READERS))
    documented = _names_in_readme_table()
    # A family documented by its prefix (LINDY_PROVIDER_KEY_<NAME>) is read by the code that owns it.
    families = {name for name in documented if "<" in name}
    for family in families:
        prefix = family.split("<", 1)[0]
        assert any(prefix in p.read_text() for p in ROOT.glob("*/*.py") if ".venv" not in p.parts), family
    assert sorted(read - documented) == [], "read but missing from the README's configuration table"
    assert sorted(documented - families - read) == [], "in the README's table but never read"
    assert len(read) > 120


def _start(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    clean.update(env, LINDY_VAR_DIR=str(tmp_path / "var"))
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=clean, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("HYDRATION_INTERVAL_SECONDS", "abc", "a whole number of at least 60"),
    ("HYDRATION_INTERVAL_SECONDS", "5", "a whole number of at least 60"),
    ("ROUTER_ONLINE_EVAL_SAMPLE_RATE", "1.5", "a number from 0 to 1"),
    ("DEBUG", "maybe", "true or false"),
    ("LOG_LEVEL", "loud", "one of 'DEBUG'"),
    ("ANTHROPIC_BASE_URL", "localhost:8080", "a URL starting http:// or https://"),
])
def test_a_bad_value_stops_start_up_with_one_line_naming_the_variable(tmp_path, name, value, expected):
    result = _start(tmp_path, **{name: value})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"ImproperlyConfigured: {name}") and expected in lines[0]


def test_a_bad_url_is_named_without_echoing_it(tmp_path):
    result = _start(tmp_path, DATABASE_URL="postgres//user:hunter2@db/lindy")
    assert result.returncode != 0
    assert "DATABASE_URL is invalid" in result.stderr and "hunter2" not in result.stderr
    result = _start(tmp_path, REDIS_URL="http://:hunter2@cache:6379/0")
    assert "REDIS_URL is invalid: expected a URL starting redis:// or rediss://" in result.stderr
    assert "hunter2" not in result.stderr


def test_unset_and_empty_take_the_default_and_good_values_parse(tmp_path):
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.HYDRATION_INTERVAL_SECONDS, s.CHANNELS_DEBOUNCE_SECONDS, s.VALIDATOR_QUALITY, s.ALLOWED_HOSTS)")
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "HYDRATION_INTERVAL_SECONDS"}}
    clean.update(LINDY_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="lindy.settings",
                 CHANNELS_DEBOUNCE_SECONDS="", VALIDATOR_QUALITY="off", ALLOWED_HOSTS=" a.example , b.example ")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(maxsplit=3) == ["43200", "3.0", "False", "['a.example', 'b.example']"]
