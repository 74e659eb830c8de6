"""The prompt optimizer's worked example: route `router.triage`, which sorts a message sent to a
support inbox into `reply`, `billing` or `security`.

It exists to show, with no network, that the optimizer finds what a prompt lacks. Its default
prompt states the security rule and says nothing about billing, while its eval set
(router/evals/router.triage.jsonl) has billing cases, each saying why it is billing. The offline
rule below follows the rules written in the prompt and nothing else: a line naming a label and
quoting words sends a message containing any of those words to that label; everything else gets
`reply`. So the parent fails every billing case; the offline reflection (router.offline_policies
.reflect) writes the failing cases' feedback into the prompt as rules; a candidate that carries
the billing rule scores higher, on cases gepa saw and on the held-out slice it never saw
(tests/router/test_optimize_split.py, `manage.py optimize_prompt router.triage --target
offline-rules --budget-usd 1 --inline`).

With a real model the route is an ordinary small classification task.
"""

from __future__ import annotations

import re

from . import variants
from .offline import OfflineReply, offline_policy
from .types import Completion

ROUTE = "router.triage"
LABELS = ("reply", "billing", "security")
DEFAULT_SYSTEM = (
    "You sort messages sent to a support inbox. Answer with one word: reply, billing or security.\n"
    "Rules:\n"
    "- security: anything about 'password', 'login', 'phishing' or 'hacked' goes to security.\n"
    "- Everything else: reply."
)
VARIANTS = {"default": DEFAULT_SYSTEM}
DESCRIPTIONS = {"default": "States the security rule only (the optimizer's example: billing is missing)."}


def system_prompt(variant: str = "default") -> str:
    return variants.pick(VARIANTS, variant, route=ROUTE)


def components(variant: str) -> dict[str, str]:
    return {variants.SYSTEM: system_prompt(variant)}


def eval_request(case: dict, variant: str) -> dict:
    """An eval case holds the message; the request is the product's own for `variant`."""
    return {"system": system_prompt(variant), "messages": [{"role": "user", "content": case["message"]}],
            "max_tokens": 20}


def verdict(completion: Completion) -> str | None:
    word = (completion.text or "").strip().strip(".").lower()
    return word if word in LABELS else None


_LABEL = re.compile(r"\b(" + "|".join(LABELS) + r")\b", re.I)
_QUOTED = re.compile(r"'([^'\n]{2,40})'")


def rules_of(system: str) -> list[tuple[str, list[str]]]:
    """(label, words) for each line of the prompt that names a label and quotes words. A line of
    the offline reflection ("- Expected billing: verdict reply, expected billing: ...") names the
    label it expects first."""
    rules = []
    for line in system.splitlines():
        expected = re.search(r"expected (" + "|".join(LABELS) + r")\b", line, re.I)
        label = expected or _LABEL.search(line)
        words = [w.lower() for w in _QUOTED.findall(line)]
        if label and words:
            rules.append((label.group(1).lower(), words))
    return rules


@offline_policy(ROUTE)
def triage(request) -> OfflineReply:
    message = request.last_user_text().lower()
    for label, words in rules_of(request.system_text()):
        if any(word in message for word in words):
            return OfflineReply(text=label)
    return OfflineReply(text="reply")
