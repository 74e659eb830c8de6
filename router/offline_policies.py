"""Offline rules of the routes the router owns: the online judge. (The `email.draft` drafter
is the drafting app's: drafting/offline.py.)

Without a model the judge cannot read meaning, so its rule is deliberately plain: an answer
with content (text or a tool call) scores 8, an empty one 2. It keeps the guardrail loop
running in the demo; real scores need a real model."""

import json
import re

from .offline import OfflineReply, offline_policy, tool_call

ANSWER = re.compile(r"<<<DATA: assistant answer>>>\n(.*?)\n<<<END DATA>>>", re.S)


@offline_policy("router.online_eval")
def judge(request) -> OfflineReply:
    match = ANSWER.search(request.last_user_text())
    try:
        answer = json.loads(match.group(1)) if match else {}
    except json.JSONDecodeError:
        answer = {}
    has_content = bool((answer.get("text") or "").strip() or answer.get("tool_calls"))
    score = 8 if has_content else 2
    reason = "The answer has content (offline rule)." if has_content else "The answer is empty (offline rule)."
    return OfflineReply(tool_calls=[tool_call("record_score", {"score": score, "reason": reason})])
