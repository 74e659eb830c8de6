"""The one list of words that turn a request into its opposite (English).

"Never pay invoice INV-9" contains the words "pay invoice INV-9"; it does not ask for them.
A quote, or an argument the user wrote, only stands for the user's request when nothing in its
sentence negates it, refuses it or makes it conditional. Both the evidence check and the
argument check read this module, so the vocabulary lives here and is tested here.

Deliberately broad: a false "negated" costs one blocked action the user can authorize with a
click; a missed negation can move money the user said not to move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Cues that negate or refuse what follows them in the same clause.
NEGATIONS = (
    "never", "not", "no", "don't", "dont", "do not", "does not", "doesn't", "did not", "didn't",
    "won't", "will not", "wouldn't", "would not", "shouldn't", "should not", "mustn't", "must not",
    "can't", "cannot", "can not", "neither", "nor", "stop", "cancel", "cancelled", "canceled", "hold off",
    "refuse", "refused", "decline", "declined", "avoid", "without", "forbid", "forbidden", "under no circumstances",
    "no longer", "instead of", "rather than", "wait", "hold on", "postpone", "abort",
)
# Cues that make what comes before them conditional: "Pay it unless it is over budget".
CONDITIONS = ("unless", "until", "only if", "only when", "if", "once", "provided", "in case")
# Words that start what the message will say ("email Jane saying we can't come"): a "can't" after
# them is the message's content, not the user's instruction.
CONTENT_MARKERS = ("saying", "to say", "that says", "telling them", "telling her", "telling him", "that", ":")
# Phrases that contain a cue yet ask for the action ("Don't forget to pay …"). They are removed
# before the cues are looked for.
AFFIRMATIVE_IDIOMS = (
    "don't forget", "dont forget", "do not forget", "never forget", "don't hesitate", "do not hesitate",
    "no later than", "not only", "no problem", "no worries", "without delay", "without fail",
    "can't wait", "cannot wait",
)

# Cues that are the action's own verb for some tools: "Cancel my 3pm meeting" asks to delete a
# calendar event; it does not negate the request.
_CANCEL = frozenset({"cancel", "cancelled", "canceled"})
ACTION_CUES = {"delete_calendar_event": _CANCEL, "cancel_calendar_event": _CANCEL}

# Purpose clauses: "Pay immediately to avoid service suspension" asks to pay; the "avoid" is about
# the suspension. What follows such a marker says why, so its cue governs the purpose, never the
# request before it; a fronted one ("To avoid late fees, pay INV-7") ends at its comma. "To avoid"
# after a verb of wanting or trying ("I want to avoid paying") is the writer's own refusal: not a
# purpose, so its cue stays.
PURPOSE_MARKERS = (
    "to avoid", "in order to avoid", "so as to avoid", "to prevent", "in order to prevent", "so as to prevent",
    "in order not to", "so as not to", "lest",
    "so that we don't", "so we don't", "so that you don't", "so you don't", "so that it doesn't", "so it doesn't",
    "so that there is no", "so there is no", "so that we do not", "so we do not", "so that we won't", "so we won't",
)
# Words after which "to avoid …" is what the writer wants to avoid, not why they ask.
REFUSING_BEFORE_PURPOSE = frozenset((
    "want wants wanted wanna try tries trying tried like prefer prefers need needs have has had going plan "
    "plans planning hope hoping wish aim aiming sure careful remember decided decide decides rather mean intend "
    "intends ought got used please best better chose choose choosing agreed agree promised asked ask told tell"
).split())

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})


def _pattern(words) -> re.Pattern:
    ordered = sorted(words, key=len, reverse=True)  # "do not" before "not"
    # Not inside a token either: "no-reply@x.test" and "stop-loss" hold no cue.
    return re.compile(r"(?<![\w'@./-])(" + "|".join(re.escape(w) for w in ordered) + r")(?![\w'@-])", re.I)


_NEGATION = _pattern(NEGATIONS)
_CONDITION = _pattern(CONDITIONS)
_IDIOM = _pattern(AFFIRMATIVE_IDIOMS)
_PURPOSE = _pattern(PURPOSE_MARKERS)
_CONTENT = re.compile(r"(?<![\w'])(" + "|".join(re.escape(w) for w in CONTENT_MARKERS if w != ":") + r")(?![\w'])|:",
                      re.I)


@dataclass(frozen=True)
class Negation:
    cue: str  # the word that negates, refuses or conditions
    where: str  # "before", "inside" or "after" the words in question


def _clean(text: str) -> str:
    # Idioms are blanked with spaces so positions in the text stay where they were.
    text = text.translate(_APOSTROPHES)
    return _IDIOM.sub(lambda m: " " * len(m.group(0)), text)


def _purpose_start(text: str) -> int | None:
    """Where a purpose clause starts in `text` after a request, or None."""
    for match in _PURPOSE.finditer(text):
        words_before = re.findall(r"[\w']+", text[:match.start()])
        if not words_before:
            continue  # a fronted purpose clause: _drop_fronted_purpose handles it
        if words_before[-1].lower() in REFUSING_BEFORE_PURPOSE:
            continue
        return match.start()
    return None


def _without_purpose(text: str) -> str:
    """`text` without its purpose clauses: a fronted one up to its comma, a later one to the end.
    Blanked with spaces so positions stay where they were."""
    fronted = re.match(r"^[\W_]*(?:" + _PURPOSE.pattern + r")[^,;:]*[,;:]", text, re.I)
    if fronted:
        text = " " * fronted.end() + text[fronted.end():]
    start = _purpose_start(text)
    return text if start is None else text[:start] + " " * (len(text) - start)


def _instruction_part(text: str) -> tuple[str, bool]:
    """The text up to where the message's own content starts, and whether it was cut."""
    match = _CONTENT.search(text)
    return (text[:match.start()], True) if match else (text, False)


def find(before: str, inside: str, after: str, *, tool: str = "") -> Negation | None:
    """The negation governing `inside`, given the words of its clause before it and of its
    sentence after it (the caller cuts the clause and the sentence), or None. `tool`: the
    action judged, whose own verb (ACTION_CUES) is not a negation."""
    inside, cut = _instruction_part(_without_purpose(_clean(inside)))
    own = ACTION_CUES.get(tool, frozenset())
    for where, text in (("inside", inside), ("before", _without_purpose(_clean(before)))):
        match = next((m for m in _NEGATION.finditer(text) if m.group(1).lower() not in own), None)
        if match:
            return Negation(match.group(1).lower(), where)
    if cut:
        return None
    after, _ = _instruction_part(_without_purpose(_clean(after)))
    # Words after the request negate it only when they condition it ("… unless I confirm") or
    # take it back ("…, no, wait"); a later "not" about something else ("…, not INV-8") does not.
    match = _CONDITION.search(after) or re.match(r"^[\W_]*(no|never|wait|don't)(?![\w'])", after, re.I)
    if match:
        return Negation(match.group(1).lower(), "after")
    return None


def negated(text: str, *, tool: str = "") -> Negation | None:
    """Whether this whole piece of text (one sentence) negates, refuses or conditions its request."""
    return find("", text, "", tool=tool)
