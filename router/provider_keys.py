"""Where provider API keys come from: only environment variables named LINDY_PROVIDER_KEY_<NAME>.

A provider row names the variable that holds its key (keys never live in the database). The
name is chosen by a superuser, so without a rule it could point at any secret of the process
(TWILIO_AUTH_TOKEN, SECRET_KEY, ...) and send it as a bearer token to a host of their choosing.
The rule is checked where a name is written (model field validator, form, service) and again
where a key is read, so a row written around the validation still sends nothing.
"""

from __future__ import annotations

import os
import re

from django.core.exceptions import ValidationError

PREFIX = "LINDY_PROVIDER_KEY_"
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
