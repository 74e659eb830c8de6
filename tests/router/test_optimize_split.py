"""An optimizer that proves itself (router.services.optimize): the eval set is split three ways,
gepa's training cases, its validation cases and a held-out slice it never sees; the run records
which case went where and refuses a set too small to split. On the worked example router.triage
(router/triage.py), whose default prompt lacks the billing rule its eval needs, `optimize_prompt`
stores a candidate that finds the rule and beats the parent on the held-out slice; the rollout
gate reads that slice."""

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from router import services, triage
from router.models import OptimizationRun, PromptVariant, Target
from router.services import evals, optimize
from router.services.evidence import unevaluated_candidate
from tests.conftest import client_for

from .helpers import route


def _cases(n):
    return [{"id": f"case-{i}"} for i in range(n)]


def test_the_split_is_three_disjoint_slices_the_same_every_time(db):
    split = optimize.split_cases("validator", evals.suite_cases("validator"))
    ids = [str(case["id"]) for case in evals.suite_cases("validator")]
    assert sorted(split["train"] + split["val"] + split["holdout"]) == sorted(ids)
    assert not set(split["train"]) & set(split["val"]) and not set(split["holdout"]) & set(split["train"] + split["val"])
    assert (len(split["holdout"]), len(split["val"]), len(split["train"])) == (18, 18, 24)
    assert optimize.split_cases("validator", list(reversed(evals.suite_cases("validator")))) == split
    small = optimize.split_cases("r", _cases(9))
    assert [len(small[k]) for k in ("train", "val", "holdout")] == [3, 3, 3]
    for n in range(9, 40):
        assert min(len(v) for v in optimize.split_cases("r", _cases(n)).values()) >= optimize.MIN_SLICE


def test_a_set_too_small_to_split_is_refused():
    with pytest.raises(ValidationError, match=r"8 eval cases: too few to split .* \(9 needed, 3 per slice\)"):
        optimize.split_cases("r", _cases(8))


def test_a_call_budget_that_cannot_cover_the_held_out_slice_is_refused(db):
    triage_route = route(triage.ROUTE)
    with pytest.raises(ValidationError, match="reserved for scoring the parent and up to 5 candidates on the 5 held-out"):
        services.optimization_run_create(route=triage_route, target=Target.objects.get(name="offline-rules"),
                                         budget_usd="1", budget_calls=30)
    assert not OptimizationRun.objects.exists()


def test_the_loop_finds_the_rule_the_parent_lacks_and_beats_it_on_the_held_out_slice(cast):
    assert "billing" not in triage.DEFAULT_SYSTEM.split("Rules:")[1]
    asked: list[str] = []  # every case a request was built for, in order

    def builder(case, variant):
        asked.append(case["id"])
        return triage.eval_request(case, variant)

    evals.register_request_builder(triage.ROUTE, builder, variants=lambda: triage.VARIANTS, verdict=triage.verdict)
    out = io.StringIO()
    try:
        call_command("optimize_prompt", triage.ROUTE, "--target", "offline-rules", "--budget-usd", "1",
                     "--budget-calls", "400", "--inline", stdout=out)
    finally:
        evals.register_request_builder(triage.ROUTE, triage.eval_request, variants=lambda: triage.VARIANTS,
                                       verdict=triage.verdict)
    run = OptimizationRun.objects.get()
    assert run.status == "done", (run.error, run.log)
    # Which case went where is on the run; gepa never asked a held-out case: those were asked only
    # at the end, once for the parent and once per stored candidate.
    split = run.split
    assert sorted(sum(split.values(), [])) == sorted(c["id"] for c in evals.suite_cases(triage.ROUTE))
    stored_count = PromptVariant.objects.filter(optimization=run).count()
    scoring = len(split["holdout"]) * (1 + stored_count)
    assert not set(asked[:-scoring]) & set(split["holdout"])
    assert set(asked[:-scoring]) <= set(split["train"]) | set(split["val"])
    assert sorted(asked[-scoring:]) == sorted(split["holdout"] * (1 + stored_count))
    stored = list(PromptVariant.objects.filter(optimization=run).order_by("-holdout_score"))
    assert stored, run.log
    best = stored[0]
    assert best.holdout_score > best.parent_holdout_score, (best.holdout_score, best.parent_holdout_score)
    assert "'invoice'" in best.components["system"] and "billing" in best.components["system"]
    assert best.eval_score > best.parent_score
    text = out.getvalue()
    assert f"held out {best.holdout_score:.3f} (parent {best.parent_holdout_score:.3f})" in text
    assert any("held-out cases gepa never saw" in line["text"] for line in run.log)
    print(text)
    # The run's page shows the split, which case went where, and the held-out scores.
    page = client_for(cast.superuser).get(f"/router/optimizations/{run.pk}/").content.decode()
    assert "data-split-cases" in page and all(case_id in page for case_id in split["holdout"])
    assert f'<strong data-holdout>{best.holdout_score:.3f}</strong>' in page
    # The rollout gate reads the held-out slice: this one may go on to its own offline eval.
    target = Target.objects.get(name="offline-rules")
    assert "held-out" not in unevaluated_candidate(route=run.route, target=target, variant=best.name)
    # A candidate that did worse there than its parent is refused, however it did on gepa's cases.
    PromptVariant.objects.filter(pk=best.pk).update(holdout_score=best.parent_holdout_score - 0.2)
    assert "below its parent's" in unevaluated_candidate(route=run.route, target=target, variant=best.name)
