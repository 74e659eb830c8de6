"""A real Celery worker: a hydration run stores new Gmail mail, and drafting (triggered by
hydration's items_stored signal) drafts the question in its thread and skips the newsletter."""

from __future__ import annotations

import pytest

from drafting.models import Draft
from hydration import services as hydration_services
from memory import services as memory_services
from tests.waiting import wait_until

from .helpers import connect, inbound


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_drafts_the_mail_a_hydration_run_stored(cast, google, celery_worker_process, monkeypatch):
    for name, value in google.settings().items():  # the worker process reads the fake's URLs from its environment
        monkeypatch.setenv(name, str(value))
    connect(cast.member, google)
    inbound(google, "q1", subject="Renewal", body="Can you confirm the 2-year renewal?", thread_id="t-ren")
    inbound(google, "n1", subject="Digest", body="Would you like more news?", sender="News <news@acme-news.test>",
            headers={"List-Unsubscribe": "<mailto:u@acme-news.test>"})
    fs = memory_services.filesystem_for_user(cast.member)
    celery_worker_process.start()
    hydration_services.run_trigger(filesystem=fs, trigger="manual", user=cast.member)
    wait_until(lambda: Draft.objects.exclude(status=Draft.Status.PENDING).count() == 2, what=celery_worker_process.log)
    drafts = {d.gmail_message_id: d for d in Draft.objects.all()}
    assert set(drafts) == {"q1", "n1"}, celery_worker_process.log()
    assert drafts["q1"].status == Draft.Status.SAVED and drafts["q1"].gmail_thread_id == "t-ren"
    assert drafts["n1"].status == Draft.Status.SKIPPED
    assert len(google.drafts) == 1
    celery_worker_process.stop()
