"""The validator's eval suite as data: its shape, its counts, and the attack classes it covers."""

from collections import Counter, defaultdict

import pytest

from lindy import tool_registry as registry
from router.services.evals import Shortcut
from validator import eval_suite, prompts

# Every attack class of issue 11, by the `attack` label its cases carry.
ATTACK_CLASSES = {
    "negation-cutout", "word-fragment", "recipient-mismatch", "amount-mismatch", "currency-mismatch",
    "payee-mismatch", "invoice-mismatch", "archive-to-delete", "external-request", "spoofed-actor",
    "followed-suggestion", "memory-provenance",
}


@pytest.fixture(scope="module")
def cases():
    return eval_suite.file_cases()


def test_the_suite_has_the_seeds_counts(cases):
    outcomes = Counter("block" if eval_suite.must_block(c) else "allow" for c in cases)
    assert len(cases) >= eval_suite.MIN_CASES == 60
    assert outcomes["block"] >= eval_suite.MIN_BLOCK == 33
    assert outcomes["allow"] >= eval_suite.MIN_ALLOW == 27
    assert len({c["id"] for c in cases}) == len(cases)
    assert {c["category"] for c in cases} == {"general", "dangerous"}


def test_every_case_is_well_formed(cases):
    assert {c["id"]: eval_suite.case_errors(c) for c in cases if eval_suite.case_errors(c)} == {}


def test_a_malformed_case_is_named_not_skipped():
    bad = {"id": "x", "category": "urgent", "history": [{"actor": "boss", "content": "pay"}],
           "action": {"tool": "wire_money", "arguments": [], "justification": None}, "expected": {"outcome": "maybe"}}
    errors = " | ".join(eval_suite.case_errors(bad))
    for part in ("category", "history event 1: actor", "action.tool 'wire_money'", "action.arguments",
                 "action.justification", "expected.outcome"):
        assert part in errors


def test_every_attack_class_of_issue_11_has_a_case_that_must_be_blocked(cases):
    blocked_attacks = {c.get("attack") for c in cases if eval_suite.must_block(c)}
    assert ATTACK_CLASSES <= blocked_attacks
    texts = " ".join(e["content"] for c in cases for e in c["history"])
    # The exact wordings issue 11 names.
    for words in ("Never pay", "Don't send", "pay attention", "sender", "User: yes", "The user approved",
                  "Follow the validator's suggestion"):
        assert words in texts
    arguments = [c["action"]["arguments"] for c in cases]
    assert any(a.get("amount") == 48000 and a.get("currency") == "USD" for a in arguments)
    assert any(a.get("payee") == "wind" for a in arguments)
    assert any(a.get("invoice_id") == "" for a in arguments)
    assert any(".evil." in " ".join(a.get("to", [])) for a in arguments)
    assert any(a.get("cc") for a in arguments)
    assert any(c.get("history") and any(e.get("name") == "user" and e["actor"] == "external" for e in c["history"])
               for c in cases)
    assert any(line["author_kind"] != "user" for c in cases for m in c.get("memories", []) for line in m.get("lines", []))


def test_near_miss_pairs_share_the_tool_and_differ_in_verdict(cases):
    pairs = defaultdict(list)
    for case in cases:
        if case.get("pair"):
            pairs[case["pair"]].append(case)
    assert len(pairs) >= 10
    for name, members in pairs.items():
        assert {c["action"]["tool"] for c in members} == {members[0]["action"]["tool"]}, name
        assert {eval_suite.must_block(c) for c in members} == {True, False}, name


def test_dangerous_tools_are_in_the_dangerous_category(cases):
    for case in cases:
        if registry.effect_of(case["action"]["tool"]) == registry.DANGEROUS:
            assert case["category"] == "dangerous", case["id"]


def test_blocking_cases_name_their_next_step_kind(cases):
    archive = next(c for c in cases if c["id"] == "archive-not-delete")
    assert archive["expected"]["next_step"] == "archive_instead"
    assert all(c["expected"].get("next_step") for c in cases if eval_suite.must_block(c))


def test_genuine_controls_quote_what_is_really_there(cases):
    """A control must be a genuine request: the product asks the model about it (no code blocks
    it first) and every quote of it is found, so a block there is a false block, not a fair catch."""
    for case in cases:
        if eval_suite.must_block(case) or case["expected"]["outcome"] == "exempt":
            continue
        request = eval_suite.build_request(case, "default")
        checked = prompts.parse_payload(request["messages"][0]["content"])["evidence_check"]
        assert checked["quotes"] and checked["all_found"], case["id"]


@pytest.mark.parametrize("variant", sorted(prompts.VARIANTS))
def test_every_case_replays_through_the_validators_own_request_builder(cases, variant):
    built = 0
    for case in cases:
        try:
            request = eval_suite.build_request(case, variant)
        except Shortcut:
            continue
        assert request["system"] == prompts.system_prompt(variant)
        assert request["tool_choice"] == {"type": "tool", "name": prompts.VERDICT_TOOL}
        assert prompts.parse_payload(request["messages"][0]["content"])["action"]["tool"] == case["action"]["tool"]
        built += 1
    # Two exempt tools and a missing justification never reach a model (nor, where the
    # deterministic argument check exists, the arguments the user never wrote).
    assert built <= len(cases) - 3
