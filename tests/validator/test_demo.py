import pytest

from lindy import demo
from validator.models import Decision

pytestmark = pytest.mark.django_db


def test_demo_decisions_are_made_by_the_validator_and_seeded_once(seeded_demo):
    from agent.demo import REQUESTS

    demo.seed()
    # The three tasks the agent works on (the demo's two weeks of history add their own:
    # agent/demo_history.py); the agent's proposals on them, judged by the validator.
    scripted = Decision.objects.filter(task__title__in=[r["title"] for r in REQUESTS]).select_related("user")
    rows = {(d.user.email, d.tool, d.status) for d in scripted}
    assert rows == {
        ("admin@acme.test", "pay_invoice", "blocked"),
        ("user@acme.test", "send_email", "blocked"),
        ("user@acme.test", "send_email", "executed"),
    }
    # Each was decided by the validator: by its model, or before it by the deterministic argument check.
    assert all(d.model_call_id or d.reasoning.startswith("Blocked before any model was asked")
               for d in Decision.objects.all())


def test_the_demo_send_is_in_the_users_outbox_as_recorded(seeded_demo):
    from agent.models import OutboxEntry

    entry = OutboxEntry.objects.get(user__email="user@acme.test", tool="send_email",
                                    decision__task__title="Thank Priya for the MSA review")
    assert entry.status == "recorded" and entry.adapter == "outbox" and entry.decision.status == "executed"


def test_the_demo_runs_the_offline_row_of_the_eval_matrix_once(seeded_demo):
    from validator.models import EvalMatrix

    demo.seed()
    matrix = EvalMatrix.objects.get()
    cells = list(matrix.cells.select_related("target"))
    # The offline rules read no prompt: one cell stands for every variant.
    assert {c.target.name for c in cells} == {"offline-rules"} and len(cells) == 1
    assert all(c.status == "done" and c.completed == matrix.case_count for c in cells)
    assert matrix.status == "done" and matrix.gate_passed is not None
