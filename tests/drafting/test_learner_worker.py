"""A real Celery worker runs the learner as beat would: the hourly cadence job finds the user due
(enough new meaningful pairs), queues their run, and the run's accepted edit is written to their
drafting.md as a revision by the learner."""

from __future__ import annotations

import pytest

from drafting.models import LearnerRun, Proposal
from drafting.services.context import context_read
from lindy import queue
from memory.models import Revision
from tests.factories import TeamFactory, member_of
from tests.waiting import wait_until

from .learner_helpers import STALE, SUBJECTS, carol_reply, drafted, paired, set_context


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_the_cadence_job_on_a_real_worker_runs_the_due_learner_and_writes_its_edit(celery_worker_process):
    team = TeamFactory(name="Acme")
    user = member_of(team, email="umar@acme.test", name="Umar Haddad")
    set_context(user, STALE)
    for i in range(12):
        draft = drafted(user, team, subject=SUBJECTS[i % len(SUBJECTS)])
        paired(draft, carol_reply(draft))
    celery_worker_process.start()
    queue.enqueue("drafting.tasks.learner_cadence")
    run = wait_until(lambda: LearnerRun.objects.filter(user=user).exclude(outcome=LearnerRun.Outcome.RUNNING).first(),
                     what=celery_worker_process.log)
    assert run.outcome == LearnerRun.Outcome.ACCEPTED, (run.message, celery_worker_process.log())
    proposal = run.proposals.get()
    assert proposal.status == Proposal.Status.ACCEPTED
    assert "Carol Reyes <carol@acme.test>: Head of Legal" in context_read(user).text
    assert proposal.written_revision.author_kind == Revision.AuthorKind.LEARNER
    celery_worker_process.stop()
