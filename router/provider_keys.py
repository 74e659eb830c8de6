"""Where provider API keys come from, and where they may go.

Keys come only from environment variables named LINDY_PROVIDER_KEY_<NAME>, and each is bound to
the host the environment names beside it, LINDY_PROVIDER_URL_<NAME>: a provider row whose base URL
is another host (compared by scheme, host and port) sends no key, and says why on the Models page.
Without the binding, a superuser who points a row at a new URL with an existing key variable
would hand that key (and every prompt sent with it) to a host of their choosing.

A provider row names the variable that holds its key (keys never live in the database). The
name is chosen by a superuser, so without a rule it could point at any secret of the process
(TWILIO_AUTH_TOKEN, SECRET_KEY, ...) and send it as a bearer token to a host of their choosing.
The rule is checked where a name is written (model field validator, form, service) and again
where a key is read, so a row written around the validation still sends nothing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

PREFIX = "LINDY_PROVIDER_KEY_"
URL_PREFIX = "LINDY_PROVIDER_URL_"
DEFAULT_PORTS = {"http": 80, "https": 443}
_NAME = re.compile(rf"{PREFIX}[A-Z0-9_]+")


def is_provider_key_env(name: str) -> bool:
    return bool(_NAME.fullmatch(name or ""))


def validate_provider_key_env(name: str) -> None:
    """Model field validator: blank (no key) or a variable with the prefix."""
    if name and not is_provider_key_env(name):
        raise ValidationError(
            f"Provider keys are read only from environment variables named {PREFIX}<NAME> "
            f"(capital letters, digits and _), e.g. {PREFIX}ATLAS.",
            code="provider_key_env",
        )


def default_env_for(provider_name: str) -> str:
    """The conventional variable of a provider: atlas -> LINDY_PROVIDER_KEY_ATLAS."""
    return PREFIX + re.sub(r"[^A-Z0-9_]", "_", provider_name.upper())


def provider_api_key(name: str) -> str:
    """The key in variable `name`; empty for a name outside the prefix, whatever the environment holds."""
    if not is_provider_key_env(name):
        return ""
    return os.environ.get(name, "")


def url_env_for(key_env: str) -> str:
    """The variable naming the one host a key may go to: LINDY_PROVIDER_KEY_ATLAS -> LINDY_PROVIDER_URL_ATLAS."""
    return URL_PREFIX + key_env[len(PREFIX):] if is_provider_key_env(key_env) else ""


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of `url`, normalised: lower case, the IDNA form of the host, the scheme's
    default port made explicit, a trailing dot dropped; None for a URL without an http(s) host.
    `urlsplit` reads the host after any userinfo, so https://api.atlas.test@evil.test is evil.test."""
    try:
        parts = urlsplit((url or "").strip())
        host, port = parts.hostname, parts.port
    except ValueError:  # an unparsable port or bracket
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not host:
        return None
    try:
        host = host.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def has_userinfo(url: str) -> bool:
    """A base URL with a user name or password: the HTTP client would send those as Basic auth in
    place of the bound key, to a host the reader of the row may take for another."""
    try:
        parts = urlsplit((url or "").strip())
        return parts.username is not None or parts.password is not None
    except ValueError:
        return False


def validate_base_url(url: str) -> None:
    if has_userinfo(url):
        raise ValidationError("A provider's base URL may not carry a user name or password (user:pass@host).",
                              code="base_url_userinfo")


def _show(key: tuple[str, str, int]) -> str:
    return f"{key[0]}://{key[1]}:{key[2]}"


@dataclass(frozen=True)
class KeyBinding:
    """What a provider row may send: `key` (empty: none), or `refusal`, why it sends nothing."""

    key: str = ""
    refusal: str = ""


def key_binding(*, base_url: str, key_env: str) -> KeyBinding:
    """The key a row with this base URL and key variable may send. A row naming no variable sends
    no key (a keyless local host); one naming a variable gets its key only at the bound host."""
    if not key_env:
        return KeyBinding()
    if not is_provider_key_env(key_env):
        return KeyBinding(refusal=f"The key variable {key_env} is not read: provider keys come only from "
                                  f"variables named {PREFIX}<NAME>.")
    url_env = url_env_for(key_env)
    bound = os.environ.get(url_env, "")
    if not bound:
        return KeyBinding(refusal=f"{url_env} is not set: the key in {key_env} is bound to no host, so it is "
                                  f"sent nowhere. Set it to the provider's base URL.")
    if has_userinfo(base_url):
        return KeyBinding(refusal="The base URL carries a user name or password: no key is sent.")
    bound_origin, row_origin = origin(bound), origin(base_url)
    if bound_origin is None:
        return KeyBinding(refusal=f"{url_env} is not an http(s) URL, so the key in {key_env} is sent nowhere.")
    if row_origin != bound_origin:
        shown = _show(row_origin) if row_origin else repr(base_url)
        return KeyBinding(refusal=f"The base URL's host {shown} is not {_show(bound_origin)}, the host {url_env} "
                                  f"binds {key_env} to: no key is sent.")
    key = os.environ.get(key_env, "")
    if not key:
        return KeyBinding(refusal=f"The environment variable {key_env} is not set.")
    return KeyBinding(key=key)
