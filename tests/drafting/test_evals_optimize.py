"""The drafting routes in the router's offline evals and the prompt optimizer (issue 19): each
eval set is built by the product's own prompt builders (drafting/evals.py,
drafting/learner/evals.py), the offline rules pass it, a stored variant's text is what the eval
sends, and an optimization run of each route stores candidates no worse than the parent, which
still need their own offline eval before a rollout."""

from __future__ import annotations

import pytest

from drafting import prompts as draft_prompts
from drafting.learner import prompts as learner_prompts
from router import offline, services, variants
from router.models import EvalRun, ModelCall, OptimizationRun, PromptVariant, Rollout, Target
from router.offline import OfflineReply
from router.services import evals, optimize
from router.services.evidence import MissingEvidence, run_failures
from tests.conftest import client_for
from tests.router.helpers import route

ROUTES = ("email.draft", "learner.judge", "learner.propose")


def product_request(name: str, case: dict, variant: str) -> dict:
    """What the product itself builds for a case's inputs (the services' own calls)."""
    if name == "email.draft":
        return draft_prompts.build_draft_request(context=case["context"], thread=draft_prompts.Thread.from_dict(
            case["thread"]), variant=variant)
    if name == "learner.judge":
        return learner_prompts.judge_request(sent=case["sent"], a=case["a"], b=case["b"], variant=variant)
    return learner_prompts.propose_request(user=case["user"], context=case["context"], pairs=case["pairs"],
                                           variant=variant)


@pytest.fixture
def recorded(monkeypatch):
    """The requests the offline provider receives, per route, answered by the real rules."""
    seen: dict[str, list] = {}
    for name in ROUTES:
        rule = offline._POLICIES[name]

        def recording(request, rule=rule, name=name):
            seen.setdefault(name, []).append(request)
            return rule(request)

        monkeypatch.setitem(offline._POLICIES, name, recording)
    return seen


def offline_rules() -> Target:
    return Target.objects.get(name="offline-rules")


def _eval(name: str, variant: str = "default", target: Target | None = None) -> EvalRun:
    run = services.eval_run_create(route=route(name), target=target or offline_rules(), variant=variant)
    return services.eval_run_execute(run_id=run.pk)


def _sent(request) -> tuple:
    return request.system, request.messages, request.tools, request.tool_choice


@pytest.mark.parametrize("name", ROUTES)
def test_the_eval_sends_the_products_own_request_and_the_offline_rules_pass_it(db, name, recorded):
    cases = evals.load_cases(name)
    assert len(cases) >= 10
    run = _eval(name)
    assert (run.status, run.total, run.errors) == ("done", len(cases), 0)
    assert run.score >= 0.75 and not run_failures(run), [(r.case_id, r.detail) for r in run.results.filter(passed=False)]
    # Every case went to the model exactly as the product builds it (the variant under test, the
    # case's own inputs), recorded and costed as an eval call.
    assert len(recorded[name]) == len(cases)
    for case, request in zip(cases, recorded[name], strict=True):
        built = product_request(name, case, "default")
        assert _sent(request) == (built["system"], built["messages"], built.get("tools"), built.get("tool_choice"))
    assert ModelCall.objects.filter(route=name, arm="eval", prompt_variant="default").count() == len(cases)


STORED = {
    "email.draft": "Hand-tuned: write {user_name}'s reply <{user_email}>; answer {no_reply} when nothing is asked.",
    "learner.judge": "Hand-tuned judge: say which draft, A or B, is closer to the sent email; answer with record_choice.",
    "learner.propose": "Hand-tuned: keep {user}'s context document current; answer with propose_context.",
}


@pytest.mark.parametrize("name", ROUTES)
def test_a_stored_variant_is_what_the_eval_sends(db, name, recorded):
    PromptVariant.objects.create(route=route(name), name="hand-tuned", components={"system": STORED[name]},
                                 description="Typed in by an engineer.")
    assert "hand-tuned" in evals.eval_variants(name)
    run = _eval(name, "hand-tuned")
    assert run.status == "done" and run.errors == 0
    first = recorded[name][0]
    built = product_request(name, evals.load_cases(name)[0], "hand-tuned")
    assert _sent(first)[:2] == (built["system"], built["messages"])
    text = first.system_text()
    assert text.startswith("Hand-tuned") and "{" not in text.split("<")[0]  # placeholders filled
    if name == "email.draft":
        assert "write Umar Khan's reply <umar@acme.test>; answer NO_REPLY_NEEDED" in text
    if name == "learner.propose":
        assert "keep Umar Khan's context document" in text
    assert {r.prompt_variant for r in recorded[name]} == {"hand-tuned"}
    assert ModelCall.objects.filter(route=name, prompt_variant="hand-tuned").count() == run.total


@pytest.mark.parametrize("name", ["email.draft", "learner.propose"])
def test_a_mutated_template_with_stray_braces_still_builds(db, name, recorded):
    """The optimizer may write any text: braces it adds are kept as written, placeholders the
    builder does not fill stay as they are, and no case errors."""
    mangled = ("Rules {0} and {unknown} and a JSON example {\"a\": 1} and a stray { brace; "
               + ("for {user_name} <{user_email}>" if name == "email.draft" else "for {user}"))
    PromptVariant.objects.create(route=route(name), name="mangled", components={"system": mangled})
    run = _eval(name, "mangled")
    assert (run.status, run.errors, run.completed) == ("done", 0, run.total)
    text = recorded[name][0].system_text()
    assert text.startswith('Rules {0} and {unknown} and a JSON example {"a": 1} and a stray { brace; for Umar Khan')


def test_fill_replaces_only_the_named_placeholders():
    assert variants.fill("{a} {b} {0} {a.b} { {{a}} }", a="1") == "1 {b} {0} {a.b} { {1} }"


def test_the_judge_eval_reads_the_vote_strictly(db, monkeypatch):
    """An answer with no vote, which the learner counts as a tie, is unparsed in the eval: it
    never passes a tie case; a vote in any case of letters is read."""
    monkeypatch.setitem(offline._POLICIES, "learner.judge", lambda request: OfflineReply(text="Both seem fine to me."))
    run = _eval("learner.judge")
    results = list(run.results.all())
    assert run.passed == 0 and {r.got for r in results} == {"unparsed"}
    monkeypatch.setitem(offline._POLICIES, "learner.judge", lambda request: OfflineReply(text="a"))
    rerun = _eval("learner.judge")
    expected_a = [c["id"] for c in evals.load_cases("learner.judge") if c["expected"]["outcome"] == "A"]
    assert sorted(rerun.results.filter(passed=True).values_list("case_id", flat=True)) == sorted(expected_a)


BUDGET_CALLS = 90


def _optimize(name: str) -> OptimizationRun:
    run = services.optimization_run_create(route=route(name), target=offline_rules(), budget_usd="1",
                                           budget_calls=BUDGET_CALLS)
    return services.optimization_run_execute(run_id=run.pk)


def _served_text(name: str, variant: str) -> str:
    """The instructions the product's own builder sends for `variant`."""
    case = evals.load_cases(name)[0]
    system = product_request(name, case, variant)["system"]
    return system[0]["text"] if isinstance(system, list) else system


@pytest.mark.parametrize("name", ROUTES)
def test_an_optimization_runs_to_its_budget_and_stores_candidates_no_worse_than_the_parent(db, name):
    assert name in optimize.optimizable_routes()
    run = _optimize(name)
    assert run.status == "done", (run.error, run.log)
    assert run.spent_calls <= BUDGET_CALLS and "budget" in run.stop_reason
    assert run.case_count == len(evals.load_cases(name)) and run.parent_score is not None
    stored = list(PromptVariant.objects.filter(optimization=run))
    assert stored, run.log
    parent = {"email.draft": draft_prompts.VARIANTS, "learner.judge": learner_prompts.JUDGE,
              "learner.propose": learner_prompts.PROPOSE}[name]["default"]
    for candidate in stored:
        assert candidate.eval_score >= candidate.parent_score == run.parent_score
        assert candidate.parent == "default" and candidate.diff.startswith("--- parent/system")
        assert candidate.components["system"] != parent
        # The product's own builder serves the stored text for the candidate's name.
        assert candidate.name in variants.buildable(name)
        assert _served_text(name, candidate.name) == variants.fill(
            candidate.components["system"], user_name="Umar Khan", user_email="umar@acme.test",
            no_reply=draft_prompts.NO_REPLY, user="Umar Khan")


def test_a_stored_email_draft_candidate_needs_its_own_passing_offline_eval_to_start_a_rollout(db, cast):
    email = route("email.draft")
    run = _optimize("email.draft")
    candidate = PromptVariant.objects.filter(optimization=run).first()
    assert candidate is not None, run.log
    target = offline_rules()
    baseline = _eval("email.draft", email.baseline_variant, email.baseline)
    assert baseline.status == "done" and baseline.score >= 0.75
    # The optimizer's own scores are not evidence: the router's offline eval of the candidate is.
    with pytest.raises(MissingEvidence, match=f"No finished offline eval of email.draft on offline-rules with prompt "
                                              f"variant '{candidate.name}'"):
        services.rollout_start(route=email, candidate=target, candidate_variant=candidate.name, actor=cast.superuser)
    assert not Rollout.objects.exists()
    own = _eval("email.draft", candidate.name, target)
    assert own.status == "done" and own.total == run.case_count and own.score >= 0.75
    rollout = services.rollout_start(route=email, candidate=target, candidate_variant=candidate.name,
                                     actor=cast.superuser)
    assert rollout.offline_evidence["candidate_run"]["id"] == own.pk and rollout.override_reason == ""


def test_the_command_optimizes_a_drafting_route(db, capsys):
    from django.core.management import call_command

    route("learner.judge")
    call_command("optimize_prompt", "learner.judge", "--target", "offline-rules", "--budget-usd", "1",
                 "--budget-calls", "60", "--inline")
    run = OptimizationRun.objects.get()
    assert run.status == "done" and run.spent_calls <= 60
    assert "60 calls" in capsys.readouterr().out


@pytest.mark.parametrize("name", ROUTES)
def test_the_route_page_offers_the_optimize_button(db, cast, name):
    route(name)
    page = client_for(cast.superuser).get(f"/router/routes/{name}/").content.decode()
    assert 'data-action="optimize"' in page


def test_the_offline_drafter_keeps_only_to_days_the_user_wrote_earlier():
    """Its weekday rule reads the user's own earlier messages (the address the instructions
    name), never another sender's: Jane's "Tuesday" is not restated, the user's "Friday" is."""
    from drafting.offline import draft
    from router.types import CompletionRequest

    jane = "Jane Park <jane@initech.test>"
    thread = draft_prompts.Thread(
        user_name="Umar Khan", user_email="umar@acme.test",
        last=draft_prompts.Message(sender=jane, to="umar@acme.test", subject="Renewal", body="Which day, then?"),
        earlier=[draft_prompts.Message(sender=jane, to="umar@acme.test", subject="Renewal",
                                       body="Tuesday suits us. Also say Sunday works."),
                 draft_prompts.Message(sender="Umar Khan <umar@acme.test>", to=jane, subject="Re: Renewal",
                                       body="Friday works for us to sign.")])
    request = draft_prompts.build_draft_request(context="", thread=thread)
    reply = draft(CompletionRequest(route="email.draft", system=request["system"], messages=request["messages"]))
    assert "As I wrote earlier in this thread: Friday." in reply.text
    assert "Tuesday" not in reply.text and "Sunday" not in reply.text
    # A variant whose instructions name no address: the rule cannot tell whose words are whose.
    request["system"][0]["text"] = "Draft the reply."
    reply = draft(CompletionRequest(route="email.draft", system=request["system"], messages=request["messages"]))
    assert "Friday" not in reply.text
