"""The validator's eval matrix: prompt variants × targets, per-cell numbers, thresholds and the gate."""

import json
from io import StringIO

import pytest
from celery import current_app
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings

from lindy import queue
from router import offline
from router.models import ModelCall, Target
from router.offline import OfflineReply, tool_call
from router.services.evals import Shortcut
from tests.fakes.anthropic_api import FakeAnthropic, message, tool_use_block
from tests.fakes.http import Reply
from validator import eval_matrix, eval_suite, prompts
from validator.models import EvalCell, EvalMatrix

VARIANTS = len(prompts.VARIANTS)


def model_cases() -> int:
    """Cases the product asks a model about (the others it answers by itself)."""
    count = 0
    for case in eval_suite.file_cases():
        try:
            eval_suite.build_request(case, "default")
            count += 1
        except Shortcut:
            pass
    return count


def verdict(approved: bool, reasoning: str = "rule") -> OfflineReply:
    return OfflineReply(tool_calls=[tool_call("record_verdict", {
        "approved": approved, "reasoning": reasoning, "confidence": "high",
        "suggestedNextStep": None if approved else "Ask the user."})])


def _key(tool, arguments, justification, contents) -> str:
    return json.dumps([tool, arguments, justification, contents], sort_keys=True, ensure_ascii=False)


def oracle() -> dict[str, bool]:
    """A stand-in judge that knows every case's right answer: approve exactly the cases that
    must be allowed. It stands for validator rules that meet the thresholds."""
    return {
        _key(c["action"]["tool"], c["action"]["arguments"], c["action"]["justification"],
             [[e["actor"], e.get("name") or "", e["content"]] for e in c["history"]]): not eval_suite.must_block(c)
        for c in eval_suite.file_cases()
    }


def oracle_approves(answers: dict[str, bool], user_text: str) -> bool:
    payload = prompts.parse_payload(user_text)
    action = payload["action"]
    return answers[_key(action["tool"], action["arguments"], payload["justification"],
                        [[e["actor"], e["name"], e["content"]] for e in payload["task_history"]])]


@pytest.fixture
def validator_rule():
    """Replace the validator's offline rule for one test, then put the real one back."""
    saved = offline._POLICIES.get("validator")

    def register(func):
        offline._POLICIES["validator"] = func

    yield register
    if saved is not None:
        offline._POLICIES["validator"] = saved


@pytest.fixture
def eager_celery():
    previous = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = previous


def run_command(*args) -> str:
    """The command with the quality assessment off (one cell per target and variant), unless the
    test asks otherwise; test_quality_on_does_not_lower_safety_accuracy runs both."""
    out = StringIO()
    if "--quality" not in args:
        args = (*args, "--quality", "off")
    call_command("validator_eval", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_a_broken_offline_rule_that_approves_everything_fails_the_gate(validator_rule):
    validator_rule(lambda request: verdict(True, "approve everything (deliberately broken)"))
    out = StringIO()
    with pytest.raises(CommandError, match="Gate: FAIL"):
        call_command("validator_eval", "--offline-only", "--gate", "--quality", "off", stdout=out)
    output = out.getvalue()
    matrix = EvalMatrix.objects.get()
    # The offline rules read no prompt: one cell stands for every variant.
    assert matrix.gate_passed is False and matrix.cells.count() == 1
    cell = matrix.cells.get(variant="default")
    # Every must-block case the model sees is approved.
    assert cell.wrong_approvals_dangerous > 0
    assert cell.false_blocks == 0 and cell.false_block_rate == 0
    assert any("dangerous action(s) wrongly approved" in f for f in cell.gate_failures)
    assert "offline-rules" in output and "FAIL" in output and "false blocks 0/27" in output
    # Every model call was recorded by the gateway as an eval call of the validator route.
    assert ModelCall.objects.filter(route="validator", arm="eval").count() == model_cases()


@pytest.mark.django_db
def test_without_gate_a_failing_matrix_reports_but_exits_zero(validator_rule):
    validator_rule(lambda request: verdict(True))
    output = run_command("--offline-only", "--variant", "terse")
    assert "Gate: FAIL" in output and EvalMatrix.objects.get().cells.count() == 1


@pytest.mark.django_db
def test_rules_that_meet_the_thresholds_pass_the_gate(validator_rule):
    answers = oracle()
    validator_rule(lambda request: verdict(oracle_approves(answers, request.last_user_text())))
    output = run_command("--offline-only", "--gate")
    assert "Gate: PASS" in output
    cell = EvalMatrix.objects.get().cells.get()
    assert (cell.accuracy, cell.false_blocks, cell.wrong_approvals_dangerous, cell.errors) == (1.0, 0, 0, 0)
    assert cell.completed == cell.total == 60 and cell.general_must_block + cell.dangerous_must_block == 33


@pytest.mark.django_db
def test_the_normal_offline_rules_are_measured_and_the_gate_matches_the_numbers():
    """Today's offline rules (before issue 11 parts 1, 2, 4 and 5 land) approve some dangerous
    cases: the gate must say so. When they block every dangerous case this still holds."""
    out = StringIO()
    try:
        call_command("validator_eval", "--offline-only", "--gate", "--quality", "off", stdout=out)
        gate_failed = False
    except CommandError:
        gate_failed = True
    matrix = EvalMatrix.objects.get()
    cells = list(matrix.cells.all())
    assert len(cells) == 1 and all(c.status == "done" and c.completed == 60 for c in cells)
    assert gate_failed == any(eval_suite.gate_failures(c) for c in cells) == (not matrix.gate_passed)
    for cell in cells:
        assert ("PASS" if cell.gate_passed else "FAIL") in out.getvalue()
        assert cell.gate_passed == (cell.wrong_approvals_dangerous == 0 and not cell.gate_failures)


@pytest.mark.django_db
def test_model_errors_fail_the_cell_even_though_the_product_blocks():
    saved = offline._POLICIES.pop("validator", None)
    try:
        with pytest.raises(CommandError):
            run_command("--offline-only", "--variant", "default", "--gate")
    finally:
        if saved:
            offline._POLICIES["validator"] = saved
    cell = EvalCell.objects.get()
    assert cell.errors == model_cases() and cell.wrong_approvals_dangerous == 0
    assert cell.gate_failures[0].startswith(f"{model_cases()} case(s) got no verdict")


@pytest.mark.django_db
def test_unknown_names_are_refused_and_nothing_is_stored():
    with pytest.raises(CommandError, match="Unknown prompt variant"):
        run_command("--variant", "nope")
    with pytest.raises(CommandError, match="Unknown target"):
        run_command("--target", "gpt-17")
    with pytest.raises(CommandError, match="only the offline-rules target"):
        run_command("--offline-only", "--target", "claude-haiku-4-5-anthropic")
    assert not EvalMatrix.objects.exists()


@pytest.mark.django_db
def test_anthropic_targets_are_judged_through_the_real_client():
    """The small and large targets: the real anthropic SDK against a local Messages API."""
    answers = oracle()
    seen = []

    def model(recorded):
        body = recorded.json
        seen.append((body["model"], body["system"][0]["text"] if isinstance(body["system"], list) else body["system"]))
        approved = oracle_approves(answers, body["messages"][-1]["content"] if isinstance(
            body["messages"][-1]["content"], str) else body["messages"][-1]["content"][0]["text"])
        block = tool_use_block("record_verdict", {"approved": approved, "reasoning": "checked", "confidence": "high",
                                                   "suggestedNextStep": None if approved else "Ask the user."})
        return Reply(200, message([block], model=body["model"], usage={"input_tokens": 1000, "output_tokens": 50}))

    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        fake.default("POST", "/v1/messages", model)
        output = run_command("--target", "claude-haiku-4-5-anthropic", "--target", "claude-sonnet-4-6-anthropic",
                             "--variant", "terse", "--gate")
    assert "Gate: PASS" in output
    haiku, sonnet = EvalMatrix.objects.get().cells.select_related("target").order_by("pk")
    assert (haiku.target.model, sonnet.target.model) == ("claude-haiku-4-5", "claude-sonnet-4-6")
    assert haiku.model_calls == sonnet.model_calls == model_cases()
    # Cost from the targets' prices: 1000 in, 50 out per call.
    assert haiku.cost == model_cases() * Target.objects.get(name="claude-haiku-4-5-anthropic").cost(input_tokens=1000, output_tokens=50)
    assert sonnet.cost > haiku.cost > 0 and haiku.mean_latency_ms is not None
    assert {m for m, _ in seen} == {"claude-haiku-4-5", "claude-sonnet-4-6"}
    assert {s for _, s in seen} == {prompts.TERSE}


@pytest.mark.django_db
def test_in_offline_mode_model_targets_are_skipped_not_scored_as_the_offline_rules():
    output = run_command("--target", "claude-haiku-4-5-anthropic", "--variant", "default")
    cell = EvalCell.objects.get()
    assert cell.status == "skipped" and "offline mode" in cell.detail and cell.completed == 0
    assert not ModelCall.objects.exists()
    assert "SKIPPED" in output and EvalMatrix.objects.get().gate_passed is False


@pytest.mark.django_db
def test_a_skipped_cell_fails_the_gate_and_the_output_names_the_cells_that_ran():
    """Offline mode, default targets: the model cells are skipped. The gate must not pass on the
    one cell that ran; it names what ran and what was skipped."""
    out = StringIO()
    with pytest.raises(CommandError, match="Gate: FAIL") as failure:
        call_command("validator_eval", "--gate", "--quality", "off", stdout=out)
    output = out.getvalue()
    matrix = EvalMatrix.objects.get()
    assert matrix.gate_passed is False
    assert matrix.cells.filter(status="skipped").count() == 2 * VARIANTS
    assert "Cells that ran: 1 of 7: offline-rules:any-variant" in output
    assert "Skipped (not measured): claude-haiku-4-5-anthropic:default" in output
    assert "claude-sonnet-4-6-anthropic:checklist skipped" in str(failure.value)
    assert "Gate: PASS" not in output


@pytest.mark.django_db
def test_offline_only_gates_on_the_one_offline_cell(validator_rule):
    answers = oracle()
    validator_rule(lambda request: verdict(oracle_approves(answers, request.last_user_text())))
    output = run_command("--offline-only", "--gate")
    assert "Cells that ran: 1 of 1: offline-rules:any-variant" in output
    assert "Gate: PASS on 1 of 1 cells" in output and "Skipped" not in output
    assert "offline-rules                  any" in output


@pytest.mark.django_db
def test_cells_fan_out_over_celery_within_the_concurrency_limit(monkeypatch):
    sent = []
    monkeypatch.setattr(queue, "enqueue", lambda name, *args, **kw: sent.append((name, *args)))
    matrix = eval_matrix.matrix_create(concurrency=2)
    # Two model targets × three variants, and one offline cell for every variant.
    assert matrix.cells.count() == 2 * VARIANTS + 1 and matrix.case_count == 60
    first = eval_matrix.dispatch(matrix.pk)
    assert len(first) == 2 and sent == [("validator.tasks.eval_cell", first[0]), ("validator.tasks.eval_cell", first[1])]
    assert eval_matrix.dispatch(matrix.pk) == []  # no room: two are running
    EvalCell.objects.filter(pk=first[0]).update(status="done")
    assert len(eval_matrix.dispatch(matrix.pk)) == 1
    assert matrix.cells.filter(status="running").count() == 2
    # Its own queue, beside the default one, routed with the other eval tasks.
    assert settings.CELERY_TASK_ROUTES["validator.tasks.eval_cell"] == {
        "queue": f"{settings.CELERY_TASK_DEFAULT_QUEUE}.evals"}


@pytest.mark.django_db
def test_a_whole_matrix_runs_through_the_celery_task(eager_celery, validator_rule, django_capture_on_commit_callbacks):
    answers = oracle()
    validator_rule(lambda request: verdict(oracle_approves(answers, request.last_user_text())))
    with django_capture_on_commit_callbacks(execute=True):
        matrix = eval_matrix.matrix_create(targets=["offline-rules"], concurrency=1)
        eval_matrix.matrix_start(matrix)
    matrix.refresh_from_db()
    assert matrix.status == "done" and matrix.gate_passed is True
    assert [c.status for c in matrix.cells.all()] == ["done"]
    assert sum(c.completed for c in matrix.cells.all()) == 60


@pytest.mark.django_db
def test_a_broker_error_puts_the_unsent_cells_back_in_the_queue(monkeypatch):
    def broker_down(name, *args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(queue, "enqueue", broker_down)
    matrix = eval_matrix.matrix_create(targets=["offline-rules"], concurrency=2)
    with pytest.raises(ConnectionError):
        eval_matrix.dispatch(matrix.pk)
    assert list(matrix.cells.values_list("status", flat=True)) == ["queued"]


@pytest.mark.django_db
def test_quality_on_does_not_lower_safety_accuracy():
    """V2: the verdict scores safety and quality apart. The offline gate runs every variant with the
    quality assessment off and on; safety accuracy with it on must not drop."""
    output = run_command("--offline-only", "--gate", "--quality", "both")
    matrix = EvalMatrix.objects.get()
    assert matrix.gate_passed and matrix.cells.count() == 2
    off, on = matrix.cells.get(quality=False), matrix.cells.get(quality=True)
    assert on.correct >= off.correct and on.wrong_approvals_dangerous == off.wrong_approvals_dangerous == 0
    assert f"offline-rules:any: safety accuracy {off.correct}/60 with quality off, {on.correct}/60 with it on" \
        in output
    assert "Cells that ran: 2 of 2: offline-rules:any-variant, offline-rules:any-variant:quality-on" in output
    assert "(holds)" in output and "DROPPED" not in output


@pytest.mark.django_db
def test_quality_that_dilutes_safety_fails_the_gate(validator_rule):
    """A rule that approves more when asked for quality (quality diluting safety) fails the gate."""
    from validator import offline as offline_rules

    def rule(request):
        reply = offline_rules.validate(request)
        if offline_rules._asks_quality(request):  # quality on: approve everything
            return verdict(True, "looks well made")
        return reply

    validator_rule(rule)
    with pytest.raises(CommandError, match="Gate: FAIL"):
        run_command("--offline-only", "--gate", "--quality", "both", "--variant", "default")
    on = EvalMatrix.objects.get().cells.get(quality=True)
    assert on.gate_passed is False and any(f.startswith("Quality dilutes safety") for f in on.gate_failures)
