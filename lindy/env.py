"""Typed reads of the environment for the settings (lindy/settings/).

Each reader parses one variable with `environs`, with its type and bounds. A value that does not parse stops start-up with ImproperlyConfigured naming the variable, the
value and the expected form, in one line. An unset or empty variable takes the default.
"""

import ipaddress
import os
import sys
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvError
from marshmallow import ValidationError
from marshmallow.validate import URL, OneOf, Range

_env = Env(expand_vars=False)


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or not value.strip() else value


def _parse(method: str, name: str, form: str, *, show_value: bool = True, **kwargs: Any) -> Any:
    raw = _raw(name)
    if raw is None:
        return None
    try:
        return getattr(_env, method)(name, **kwargs)
    except EnvError:
        # A URL may hold a password: its value is never echoed.
        shown = f"{name}={raw!r}" if show_value else name
        raise ImproperlyConfigured(f"{shown} is invalid: expected {form}") from None


def _bounds(low: float | None, high: float | None, low_inclusive: bool = True) -> str:
    if low is not None and high is not None:
        return f"from {low:g} to {high:g}" if low_inclusive else f"above {low:g} and at most {high:g}"
    if low is not None:
        return f"of at least {low:g}" if low_inclusive else f"above {low:g}"
    return f"of at most {high:g}" if high is not None else ""


def integer(name: str, default: int, *, min: int | None = None, max: int | None = None) -> int:
    form = f"a whole number {_bounds(min, max)}".strip()
    value = _parse("int", name, form, validate=Range(min=min, max=max))
    return default if value is None else int(value)


def number(name: str, default: float, *, min: float | None = None, max: float | None = None,
           min_inclusive: bool = True) -> float:
    form = f"a number {_bounds(min, max, min_inclusive)}".strip()
    value = _parse("float", name, form, validate=Range(min=min, max=max, min_inclusive=min_inclusive))
    return float(default if value is None else value)


def flag(name: str, default: bool) -> bool:
    value = _parse("bool", name, "true or false (1/0, yes/no, on/off)")
    return default if value is None else bool(value)


def text(name: str, default: str = "") -> str:
    value = _parse("str", name, "text")
    return default if value is None else str(value)


def choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    form = "one of " + ", ".join(repr(c) for c in choices)
    value = _parse("str", name, form, validate=OneOf(choices))
    return default if value is None else str(value)


def url(name: str, default: str, *, schemes: tuple[str, ...] = ("http", "https")) -> str:
    form = "a URL starting " + " or ".join(f"{scheme}://" for scheme in schemes)
    value = _parse("str", name, form, show_value=False, validate=URL(schemes=set(schemes), require_tld=False))
    return default if value is None else str(value)


def text_list(name: str, default: str = "") -> list[str]:
    raw = _raw(name)
    return [item.strip() for item in (raw if raw is not None else default).split(",") if item.strip()]


def _networks(value: str) -> None:
    for item in value.split(","):
        if item.strip():
            try:
                ipaddress.ip_network(item.strip(), strict=False)
            except ValueError as exc:
                raise ValidationError(str(exc)) from None


def network_list(name: str, default: str = "") -> list[str]:
    value = _parse("str", name, "comma-separated IP addresses or networks such as 10.0.0.0/8,127.0.0.1",
                   validate=_networks)
    return [item.strip() for item in (default if value is None else value).split(",") if item.strip()]


def path(name: str, default: Path) -> Path:
    value = _parse("path", name, "a file system path")
    return default if value is None else Path(value)


def _dotted(value: str) -> None:
    if "." not in value or not all(part.isidentifier() for part in value.split(".")):
        raise ValidationError("not a dotted path")


def dotted_path(name: str, default: str) -> str:
    value = _parse("str", name, "a dotted Python path such as package.module.function", validate=_dotted)
    return default if value is None else str(value)


def exit_on_bad_settings() -> None:
    """Load the settings; if one is misconfigured, exit with its one-line message, no traceback.

    Called by the entry points (manage.py, the WSGI app, the Celery app) so an operator who typed
    HYDRATION_INTERVAL_SECONDS=abc reads one line naming it, whatever process they started.
    """
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018 - the first attribute read imports the settings module
    except ImproperlyConfigured as exc:
        sys.exit(f"ImproperlyConfigured: {exc}")
