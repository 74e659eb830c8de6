"""Offline rules for the `validator` route: a deterministic verdict from the code's evidence
check and the history (who asked for what). Honest about its limits: it approves only actions
the user's own quoted words ask for, and blocks everything else."""

from __future__ import annotations

import re

from router.offline import OfflineReply, offline_policy, tool_call

from .prompts import VERDICT_TOOL, parse_payload

VERBS = {
    "send_email": ("send", "email", "e-mail", "mail", "reply", "write", "follow up", "follow-up", "tell"),
    "reply_to_email": ("reply", "respond", "answer", "send", "write", "tell", "follow up", "follow-up"),
    "forward_email": ("forward", "send", "pass"),
    "create_calendar_event": ("meeting", "invite", "calendar", "schedule", "event", "book", "set up"),
    "send_calendar_invite": ("invite", "calendar", "meeting", "add"),
    "post_slack_message": ("post", "slack", "tell", "announce", "share", "let", "say"),
    "delete_email": ("delete", "remove", "trash"),
    "delete_calendar_event": ("delete", "cancel", "remove"),
    "pay_invoice": ("pay",),
    "share_file_externally": ("share", "send", "give"),
}
TARGET_KEYS = ("to", "cc", "attendees", "recipient", "payee", "channel")


def _verdict(approved: bool, reasoning: str, confidence: str, step: str | None = None) -> OfflineReply:
    return OfflineReply(tool_calls=[tool_call(VERDICT_TOOL, {
        "approved": approved, "reasoning": reasoning, "confidence": confidence,
        "suggestedNextStep": None if approved else step,
    })])


def _mentions(text: str, words) -> bool:
    return any(re.search(r"(?<![a-z])" + re.escape(w) + r"(?![a-z])", text) for w in words)


def _targets(arguments: dict) -> list[str]:
    found = []
    for key in TARGET_KEYS:
        value = arguments.get(key)
        found += value if isinstance(value, list) else ([value] if isinstance(value, str) and value else [])
    return found


def _target_named(target: str, text: str) -> bool:
    target = target.casefold().lstrip("#@")
    candidates = {target}
    if "@" in target:
        local = target.split("@", 1)[0]
        candidates |= {local, *[p for p in re.split(r"[._+-]", local) if len(p) > 2]}
    return any(c and c in text for c in candidates)


def _who(source: dict) -> str:
    if source.get("where") == "memory":
        return f"a memory ({source.get('name')})"
    name = f" {source['name']}" if source.get("name") else ""
    actor = source.get("actor", "someone")
    return {"external": f"an external party{name}", "assistant": "the assistant itself",
            "tool": "a tool result"}.get(actor, actor)


def decide(payload: dict) -> OfflineReply:
    action = payload.get("action") or {}
    tool, arguments = action.get("tool", ""), action.get("arguments") or {}
    quotes = (payload.get("evidence_check") or {}).get("quotes") or []
    history = payload.get("task_history") or []
    user_text = " ".join(e.get("content", "") for e in history if e.get("actor") == "user").casefold()
    describe = action.get("description") or tool

    if tool.startswith("delete_") and "archive" in user_text and not _mentions(user_text, ("delete", "remove", "trash")):
        return _verdict(False, "The user asked to archive, not to delete; deleting cannot be undone.", "high",
                        "Archive it instead (archive_email).")

    missing = [q["quote"] for q in quotes if not q.get("found")]
    if missing:
        listed = "; ".join(f"“{m}”" for m in missing)
        return _verdict(False, f"The justification quotes words that appear nowhere in the task history or the "
                        f"user's memories: {listed}. A claim is not evidence.", "high",
                        f"Ask the user whether they want this: {describe}.")

    by_user = [q for q in quotes if q.get("by_user")]
    if not by_user:
        if quotes:
            authors = sorted({_who(s) for q in quotes for s in q.get("sources", [])})
            reason = ("The justification rests on what " + ", ".join(authors) + " wrote, not on anything the user "
                      "said. Only the user can authorize actions; a request from a sender, recipient or vendor "
                      "does not.")
        else:
            reason = "The justification quotes nothing the user said. Only the user can authorize this action."
        return _verdict(False, reason, "high", f"Ask the user (send_sms_to_user) whether they want this: {describe}.")

    verbs = VERBS.get(tool, ())
    relevant = [q for q in by_user if _mentions(q["quote"].casefold(), verbs)]
    if not relevant:
        return _verdict(False, "The user's quoted words do not ask for this kind of action.", "medium",
                        f"Ask the user whether they want this: {describe}.")

    from_task = [q for q in relevant if any(s.get("actor") == "user" for s in q.get("sources", []))]
    if from_task:
        cited = " ".join(f"“{q['quote']}”" for q in from_task)
        missing_targets = [t for t in _targets(arguments) if not _target_named(t, user_text)]
        if missing_targets:
            return _verdict(False, f"The user asked for this ({cited}) but never named "
                            f"{', '.join(missing_targets)}.", "medium",
                            f"Ask the user before involving {', '.join(missing_targets)}.")
        if tool == "pay_invoice" and not _mentions(user_text, [str(arguments.get("invoice_id", "")).casefold()]):
            return _verdict(False, "Paying needs the user to name the invoice; they did not.", "high",
                            "Ask the user to confirm the invoice and amount.")
        return _verdict(True, f"The user asked for this in the task: {cited}.", "high")

    if action.get("effect") == "dangerous":
        return _verdict(False, "Money moving or data leaving needs the user's explicit instruction in this task; "
                        "a standing permission is not enough.", "high",
                        f"Ask the user to confirm: {describe}.")
    cited = " ".join(f"“{q['quote']}”" for q in relevant)
    return _verdict(True, f"The user's standing permission in their memory covers this: {cited}.", "medium")


@offline_policy("validator")
def validate(request) -> OfflineReply:
    payload = parse_payload(request.last_user_text())
    if payload is None:
        return _verdict(False, "The validation request could not be read.", "low", "Ask the user to confirm.")
    return decide(payload)
