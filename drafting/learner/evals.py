"""The learner's routes in the router's offline evals and the prompt optimizer.

learner.judge — router/evals/learner.judge.jsonl:

    {"id", "description", "sent": "<what the user sent>", "a": "<draft A>", "b": "<draft B>",
     "expected": {"outcome": "A" | "B" | "tie"}}

  The request is `prompts.judge_request` for the variant under test, and the answer is read as
  the learner reads it (judging.completion_vote), strictly: an answer with no vote in it, which
  the learner would count as a tie, scores as unparsed. Cases come in position-swapped twins, so
  a judge that always answers "A" scores half.

learner.propose — router/evals/learner.propose.jsonl:

    {"id", "description", "user": "<display name>", "context": "<current document>",
     "pairs": [{"inbound_from", "subject", "inbound", "draft", "sent"}],
     "expected": {"contains": [...], "absent": [...]}}

  The request is `prompts.propose_request`; the scoring reads the proposed document and summary
  (the tool call's input): the lesson the pairs teach must be in it, text the pairs do not
  support (an instruction injected into an inbound email, a contact nobody looped in) must not.
"""

from __future__ import annotations

from router.types import Completion

from . import judging, prompts


def judge_eval_request(case: dict, variant: str) -> dict:
    return prompts.judge_request(sent=case["sent"], a=case["a"], b=case["b"], variant=variant)


def judge_verdict(completion: Completion) -> str | None:
    return judging.completion_vote(completion.tool_calls, completion.text, strict=True)


def propose_eval_request(case: dict, variant: str) -> dict:
    return prompts.propose_request(user=case.get("user", ""), context=case.get("context", ""),
                                   pairs=list(case.get("pairs") or []), variant=variant)


def judge_components(variant: str) -> dict[str, str]:
    return {"system": prompts.judge_system(variant)}


def propose_components(variant: str) -> dict[str, str]:
    """The proposer's instructions, with its {user} placeholder unfilled."""
    return {"system": prompts.propose_template(variant)}
