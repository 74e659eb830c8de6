"""The judge's position swap, as pure logic (the calls are in drafting.learner.services).

Every comparison is asked twice: once with the current context's draft in position A and the
proposed context's draft in B, once swapped. A vote is "A", "B" or "tie" as the judge answered;
`preference` maps it back to which *draft* it preferred ("old", "new" or "tie"). The two
orders must agree for the comparison to count: agreement on "new" is a win, on "old" a loss,
anything else a tie. A judge that always answers "A" (positional bias) therefore decides
nothing, and the audit (drafting.learner.selectors.judge_audit) shows its swap agreement.
"""

from __future__ import annotations

from .prompts import JUDGE_TOOL

WIN, LOSS, TIE = "win", "loss", "tie"
VOTES = ("A", "B", "tie")


def preference(vote: str, *, new_first: bool) -> str:
    """Which draft a vote preferred: "new", "old" or "tie"."""
    if vote not in ("A", "B"):
        return "tie"
    new_position = "A" if new_first else "B"
    return "new" if vote == new_position else "old"


def outcome(first_vote: str, second_vote: str) -> str:
    """first_vote: old in A, new in B. second_vote: new in A, old in B."""
    first = preference(first_vote, new_first=False)
    second = preference(second_vote, new_first=True)
    if first == second == "new":
        return WIN
    if first == second == "old":
        return LOSS
    return TIE


def swap_agrees(first_vote: str, second_vote: str) -> bool:
    """The two orders picked the same draft (both ties counts as agreeing)."""
    return preference(first_vote, new_first=False) == preference(second_vote, new_first=True)


def read_vote(value) -> str | None:
    """"A", "B" or "tie" as the judge wrote it, or None when it is none of them."""
    text = str(value or "").strip().strip(".\"'").lower()
    if text in ("a", "draft a", "candidate a"):
        return "A"
    if text in ("b", "draft b", "candidate b"):
        return "B"
    if text in ("tie", "neither"):
        return "tie"
    return None


def parse_vote(value) -> str:
    """The product's reading: anything but a vote for A or B decides nothing, like a tie."""
    return read_vote(value) or "tie"


def completion_vote(tool_calls, text: str, *, strict: bool = False) -> str | None:
    """The vote in a judge's answer: its record_choice call, else its text. `strict` (the
    evals) answers None for an answer that holds no vote, which the product counts as a tie,
    so an unreadable answer never scores as a correct "tie"."""
    for call in tool_calls:
        if call.name == JUDGE_TOOL:
            value = (call.input or {}).get("closer")
            return read_vote(value) if strict else parse_vote(value)
    return read_vote(text) if strict else parse_vote(text)
