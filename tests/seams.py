"""Swapping a hook of lindy.seams in a test, restored after: `replaced(user_message_sender=fn)` as a
context manager, or the `seam` fixture (tests/conftest.py): `seam.user_message_sender = fn`.

A real Celery worker is another process: `tests/fixtures/worker_main.py` swaps the hooks named in
its environment (`LINDY_TEST_INBOUND_HANDLER`, `LINDY_TEST_USER_MESSAGE_SENDER`: dotted paths) after
the apps are ready. Only tests read these variables; the product has no setting for them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.utils.module_loading import import_string

from lindy import seams

HOOKS = ("inbound_handler", "user_message_sender")


def _resolve(hook: Callable[..., Any] | str) -> Callable[..., Any]:
    return import_string(hook) if isinstance(hook, str) else hook


def _register(name: str, hook: Callable[..., Any] | str) -> None:
    if name not in HOOKS:
        raise AttributeError(f"lindy.seams has no hook {name!r} (one of {', '.join(HOOKS)})")
    getattr(seams, f"register_{name}")(_resolve(hook))


@contextmanager
def replaced(**hooks: Callable[..., Any] | str) -> Iterator[None]:
    """Each named hook (a callable or its dotted path) in place of the registered one, until the
    block ends."""
    saved = dict(seams._hooks)
    try:
        for name, hook in hooks.items():
            _register(name, hook)
        yield
    finally:
        seams._hooks.clear()
        seams._hooks.update(saved)


class Seam:
    """The `seam` fixture: like pytest-django's `settings`, `seam.inbound_handler = fn` swaps the
    hook until the test ends."""

    def __setattr__(self, name: str, hook: Callable[..., Any] | str) -> None:
        _register(name, hook)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in HOOKS:
            raise AttributeError(name)
        return getattr(seams, name)()


def environment_variable(name: str) -> str:
    return f"LINDY_TEST_{name.upper()}"


def install_from_environment() -> None:
    """In a test's worker process: the hooks its environment names, in place of the registered ones."""
    for name in HOOKS:
        if path := os.environ.get(environment_variable(name)):
            _register(name, path)
