"""`manage.py learner_simulate` (issue 15 part 9): over two simulated weeks the heavy-edit rate at
least halves from the first days to the last, the gate rejects some proposals, and the JSON
line is the last line. Small N to keep it quick; seeds the other tests don't use."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from drafting.learner.models import Proposal
from drafting.models import Draft

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
    # nothing is left behind
    assert not Draft.objects.exists() and not Proposal.objects.exists()
