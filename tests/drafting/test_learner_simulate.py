"""`manage.py learner_simulate` (issue 15 part 9): over two simulated weeks the heavy-edit rate at
least halves from the first days to the last, the gate rejects some proposals, and the JSON
line is the last line. Small N to keep it quick; seeds the other tests don't use."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from drafting.models import Draft, Proposal

pytestmark = pytest.mark.django_db(transaction=False)


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values)


@pytest.mark.parametrize("seed", [11, 23])
def test_two_weeks_halve_the_heavy_edit_rate_and_the_gate_rejects_some(seed):
    out = io.StringIO()
    call_command("learner_simulate", users=2, days=14, seed=seed, stdout=out)
    lines = out.getvalue().strip().splitlines()
    result = json.loads(lines[-1])
    days = result["days"]
    assert [d["day"] for d in days] == list(range(1, 15)) and all(d["drafts"] > 0 for d in days)
    first, last = _mean(d["heavy_edit_rate"] for d in days[:3]), _mean(d["heavy_edit_rate"] for d in days[-3:])
    assert last <= first / 2, (first, last, "\n".join(lines[-60:]))
    assert result["rejected"] > 0 and result["accepted"] > 0
    assert result["judge_swap_agreement"] == 1.0  # the offline judge reads no positions
    [audit] = result["judge_audit"]  # its figures are printed, and it passes its audit
    assert audit["judge"] == "offline-rules/default" and audit["swap_agreement"] == 1.0
    assert audit["comparisons"] > 0 and audit["swap_interval"][1] == 1.0 and audit["flags"] == []
    assert any(line.startswith("judge audit offline-rules/default: ") for line in lines)
    # nothing is left behind
    assert not Draft.objects.exists() and not Proposal.objects.exists()


def test_the_simulation_drafts_with_the_products_own_inbound_step():
    """Only Gmail and the people are simulated: each inbound email goes through
    drafting.services.inbound.draft_inbound, read from the simulated mailbox in Gmail's shapes
    (the Message-ID header becomes the draft's reply reference), its rules and the model decide what
    is skipped, and each draft is saved through the outbox like any other."""
    from agent.models import OutboxEntry
    from drafting.learner.simulation.runner import simulate

    simulate(users=1, days=1, seed=5, keep=True)
    drafts = list(Draft.objects.all())
    drafted = [d for d in drafts if d.drafted]
    assert drafted and all(d.rfc_message_id == f"<{d.gmail_message_id}@sim.test>" for d in drafted)
    assert all(d.status == Draft.Status.RECORDED and d.model_call_id and d.request for d in drafted)
    saved = OutboxEntry.objects.filter(tool="draft_email", user=drafted[0].user)
    assert saved.count() == len(drafted)
    assert sorted(e.arguments["in_reply_to"] for e in saved) == sorted(d.rfc_message_id for d in drafted)
    assert all(d.skip_reason for d in drafts if d.status == Draft.Status.SKIPPED)
    assert {d.status for d in drafts} <= {Draft.Status.RECORDED, Draft.Status.SKIPPED}
