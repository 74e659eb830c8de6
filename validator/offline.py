"""Offline rules for the `validator` route: a deterministic verdict from the code's evidence
table (each quote: found, whole clause, negated, by the user) and argument check. Honest about
its limits: it approves only actions the user's own quoted words ask for, with arguments that
match what they wrote, and blocks everything else."""

from __future__ import annotations

import re

from router.offline import OfflineReply, offline_policy, tool_call

from .prompts import VERDICT_TOOL, has_quality, parse_payload

VERBS = {
    "send_email": ("send", "email", "e-mail", "mail", "reply", "write", "follow up", "follow-up", "tell"),
    "reply_to_email": ("reply", "respond", "answer", "send", "write", "tell", "follow up", "follow-up"),
    "forward_email": ("forward", "send", "pass"),
    "create_calendar_event": ("meeting", "invite", "calendar", "schedule", "event", "book", "set up"),
    "send_calendar_invite": ("invite", "calendar", "meeting", "add"),
    "post_slack_message": ("post", "slack", "tell", "announce", "share", "let", "say"),
    "delete_email": ("delete", "remove", "trash"),
    "delete_calendar_event": ("delete", "cancel", "remove"),
    "update_calendar_event": ("move", "change", "reschedule", "rename", "push", "invite", "add", "remove", "update"),
    "cancel_calendar_event": ("cancel", "call off"),
    "pay_invoice": ("pay",),
    "share_file_externally": ("share", "send", "give"),
}


def _verdict(approved: bool, reasoning: str, confidence: str, step: str | None = None) -> OfflineReply:
    return OfflineReply(tool_calls=[tool_call(VERDICT_TOOL, {
        "approved": approved, "reasoning": reasoning, "confidence": confidence,
        "suggestedNextStep": None if approved else step,
    })])


def _mentions(text: str, words) -> bool:
    return any(re.search(r"(?<![a-z])" + re.escape(w) + r"(?![a-z])", text) for w in words)


def _who(source: dict) -> str:
    if source.get("where") == "memory":
        kind = {"user": "a line the user wrote", "others": "a line derived from other people's words",
                "team": "a team line", "unknown": "a line of unknown authorship"}.get(source.get("author_kind", ""),
                                                                                   "a memory line")
        owner = "the user's own memory" if _users_memory(source) else "the team's memory (not the user's)"
        return f"{kind} in {owner} {source.get('name')}"
    name = f" named “{source['name']}”" if source.get("name") else ""
    actor = source.get("actor", "someone")
    return {"external": f"an external party{name}", "assistant": "the assistant itself",
            "tool": "a tool result", "system": "Lindy's own system note (not the user)",
            "user": "the user"}.get(actor, actor)


def _users_memory(source: dict) -> bool:
    return source.get("where") == "memory" and str(source.get("name", "")).startswith("user:")


def _by_user(source: dict) -> bool:
    """Written by the user (whether or not it counts): a user event, or their own memory line."""
    return source.get("actor") == "user" or (_users_memory(source) and source.get("author_kind") == "user")


def _why_not(quote: dict) -> str:
    """Why a found quote is not the user's words, from the code's evidence table."""
    sources = quote.get("sources") or []
    by_user = [s for s in sources if _by_user(s)]
    if by_user:
        negated = [s for s in by_user if s.get("negated")]
        if negated:
            return f"the user's sentence negates it (“{negated[0].get('negation_cue')}”)"
        return "it is only a fragment of the user's clause, not what they asked"
    return "it was written by " + ", ".join(sorted({_who(s) for s in sources}))


def decide(payload: dict) -> OfflineReply:
    action = payload.get("action") or {}
    tool = action.get("tool", "")
    evidence = payload.get("evidence_check") or {}
    quotes = evidence.get("quotes") or []
    describe = action.get("description") or tool

    checked = evidence.get("arguments")
    if not isinstance(checked, dict):
        return _verdict(False, "The arguments were not checked against the user's words.", "low",
                        f"Ask the user to confirm: {describe}.")
    if not checked.get("ok"):
        return _verdict(False, f"The arguments do not match what the user wrote: {checked.get('reasoning')}.",
                        "high", checked.get("suggestion") or f"Ask the user to confirm exactly what they want: {describe}.")

    flow = evidence.get("dataflow") or {}
    tainted = flow.get("tainted_in_content") or []
    if tainted:
        listed = "; ".join(str(line).replace(" — TAINTED", "") for line in tainted)
        return _verdict(False, f"The action carries values only third-party content wrote, which the user never "
                        f"named: {listed}. Without a model the offline rule treats them as the third party's.",
                        "medium", f"Ask the user whether to include them: {describe}.")

    missing = [q["quote"] for q in quotes if not q.get("found")]
    if missing:
        listed = "; ".join(f"“{m}”" for m in missing)
        return _verdict(False, f"The justification quotes words that appear nowhere (as whole words in one event "
                        f"or memory line) in the task history or the user's memories: {listed}. A claim is not "
                        "evidence.", "high", f"Ask the user whether they want this: {describe}.")

    refused = [q for q in quotes if any(s.get("negated") and _by_user(s) for s in q.get("sources") or [])]
    if refused:
        listed = "; ".join(f"“{q['quote']}” ({_why_not(q)})" for q in refused)
        return _verdict(False, f"The user said not to: {listed}.", "high",
                        f"Do not do it; ask the user if unsure: {describe}.")

    by_user = [q for q in quotes if q.get("by_user")]
    if not by_user:
        if quotes:
            listed = "; ".join(f"“{q['quote']}”: {_why_not(q)}" for q in quotes)
            reason = (f"No quote is the user's own words: {listed}. Only the user can authorize actions; a request "
                      "from a sender, recipient, vendor, a tool result or the assistant does not.")
        else:
            reason = "The justification quotes nothing the user said. Only the user can authorize this action."
        return _verdict(False, reason, "high", f"Ask the user by text message whether they want this: {describe}.")

    verbs = VERBS.get(tool, ())
    relevant = [q for q in by_user if _mentions(q["quote"].casefold(), verbs)]
    if not relevant:
        listed = "; ".join(f"“{q['quote']}”" for q in by_user)
        return _verdict(False, f"The user's quoted words ({listed}) do not ask for this kind of action.", "medium",
                        f"Ask the user whether they want this: {describe}.")

    from_task = [q for q in relevant if any(s.get("counts") and s.get("where") == "task"
                                            for s in q.get("sources", []))]
    if from_task:
        cited = " ".join(f"“{q['quote']}”" for q in from_task)
        return _verdict(True, f"The user asked for this in the task: {cited}; the recipients, channels, payees, items and amounts the code compares match their words.",
                        "high")

    if action.get("effect") == "dangerous":
        return _verdict(False, "Money moving or data leaving needs the user's explicit instruction in this task; "
                        "a standing permission is not enough.", "high",
                        f"Ask the user to confirm: {describe}.")
    cited = " ".join(f"“{q['quote']}”" for q in relevant)
    return _verdict(True, f"The user's standing permission, a line they wrote in their own memory, covers this: "
                    f"{cited}.", "medium")
def assess_quality(payload: dict) -> dict:
    """The offline rule's quality assessment, apart from safety: does the action's kind match the
    words the user used (as quoted)? Without a model it cannot judge content or tone, and says so."""
    action = payload.get("action") or {}
    tool = action.get("tool", "")
    quotes = [q for q in (payload.get("evidence_check") or {}).get("quotes") or [] if q.get("by_user")]
    if any(_mentions(q["quote"].casefold(), VERBS.get(tool, ())) for q in quotes):
        return {"score": 4, "assessment": "The user's own words ask for this kind of action (offline rule: content "
                                          "and tone are not judged without a model)."}
    return {"score": 2, "assessment": "Nothing the user wrote (as quoted) names this kind of action (offline "
                                      "rule: content and tone are not judged without a model)."}


def _asks_quality(request) -> bool:
    return any(t.get("name") == VERDICT_TOOL and has_quality(t) for t in request.tools or [])


@offline_policy("validator")
def validate(request) -> OfflineReply:
    payload = parse_payload(request.last_user_text())
    if payload is None:
        return _verdict(False, "The validation request could not be read.", "low", "Ask the user to confirm.")
    reply = decide(payload)
    if _asks_quality(request):
        # Scored apart: the safety verdict above is final whatever the quality says.
        reply.tool_calls[0].input["quality"] = assess_quality(payload)
    return reply
