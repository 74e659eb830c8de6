"""The iMessage provider's HTTP client is built once per process and configuration: building an
httpx.Client loads the CA bundle into a new SSL context (tens to hundreds of milliseconds of CPU
on a busy machine), which every typing bubble paid before the bundle reached the agent."""

from __future__ import annotations

from django.test import override_settings

from channels_app.providers import linq
from tests.fakes.linq import FakeLinq


def test_calls_reuse_one_client_and_a_new_configuration_gets_its_own():
    with FakeLinq() as fake, override_settings(**fake.settings()):
        first = linq._client()
        linq.typing_start(chat_id="c1")
        linq.typing_stop(chat_id="c1")
        assert linq._client() is first and not first.is_closed
        assert [r.path for r in fake.typing("POST")] == ["/v3/chats/c1/typing"]
        assert [r.path for r in fake.typing("DELETE")] == ["/v3/chats/c1/typing"]
        with FakeLinq() as other, override_settings(**other.settings()):
            assert linq._client() is not first
            linq.typing_start(chat_id="c2")  # reaches the server now configured
            assert [r.path for r in other.typing("POST")] == ["/v3/chats/c2/typing"]
        assert linq._client() is first


def test_a_worker_process_builds_its_client_when_it_starts():
    """Not on the first hand-over after a start, which would pay for it before the agent."""
    from celery.signals import worker_process_init

    import channels_app.tasks  # noqa: F401  (connects the worker signals, as a worker does)

    with FakeLinq() as fake, override_settings(**fake.settings()):
        linq._CLIENTS.clear()
        worker_process_init.send(sender=None)
        assert len(linq._CLIENTS) == 1 and linq._client() is next(iter(linq._CLIENTS.values()))
