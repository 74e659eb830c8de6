"""Absolute links for what leaves the site (emails, Slack posts): a relative path cannot be clicked
in a mail client. Built on settings.LINDY_BASE_URL, the site's public origin."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse


def absolute_url(path: str) -> str:
    """`path` ("/channels/health/") on the site's public origin."""
    return settings.LINDY_BASE_URL.rstrip("/") + "/" + path.lstrip("/")


def absolute_reverse(viewname: str, *args, fragment: str = "") -> str:
    """reverse() as an absolute URL, with an optional #fragment."""
    return absolute_url(reverse(viewname, args=args)) + (f"#{fragment}" if fragment else "")
