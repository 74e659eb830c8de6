"""Where a piece of text sits in what someone wrote: normalising, word-boundary matching,
sentences, and whether a quote is a whole clause or a fragment cut out of one.

"pay" cut out of "I'll pay attention", or "pay invoice INV-9" cut out of "Never pay invoice
INV-9 …", is in the text but is not what was asked. A quote stands for a request only when it
covers a whole clause: nothing but courtesy words ("please", "could you") before it in its
clause, nothing but a clause's end or a joining word ("and", "then") after it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "“": '"', "”": '"', "„": '"', "«": '"', "»": '"'})

# Clause ends inside a sentence.
_CLAUSE_PUNCTUATION = ",;:()[]—–\""
# Words that join clauses: what follows them starts a clause of its own.
JOINERS = ("and", "then", "and then", "but", "or", "so", "also", "and also")
# Courtesy and address before a request; they do not change what is asked.
LEADING_COURTESY = (
    "please", "pls", "kindly", "ok", "okay", "yes", "yep", "sure", "great", "thanks", "hi", "hey", "now", "just",
    "also", "and", "then", "so", "can you", "could you", "would you", "will you", "go ahead and", "i want you to",
    "i'd like you to", "i would like you to", "you may", "you can", "you may always", "you can always", "always",
    "feel free to", "lindy", "don't forget to", "do not forget to", "remember to", "make sure to", "make sure you",
    "i need you to", "go ahead,",
)
TRAILING_COURTESY = ("please", "thanks", "thank you", "now", "asap", "right away", "for me")

# Time words and adverbs around a request: "Please send it to Jane today", "Quickly post it by
# Friday". They say when or how, not what, so a quote that leaves them out is still the request.
TIME_WORDS = frozenset((
    "today tomorrow tonight now soon later asap again too also first thing this next morning afternoon evening "
    "night week weekend month quarter year by before after end of the day eod eow cob on at in a an as well "
    "possible right away when you can get chance your convenience straight immediately minutes minute hour "
    "hours noon midnight am pm monday tuesday wednesday thursday friday saturday sunday january february "
    "march april may june july august september october november december please thanks thank kindly"
).split())
_NOT_ADVERBS = frozenset({"reply", "apply", "supply", "only", "family", "rely", "fly", "ally", "italy", "july"})
_TIME_TOKEN = re.compile(r"\d{1,2}(?::\d{2})?(?:am|pm)?|\d{1,2}(?:st|nd|rd|th)|\w+ly")
# A value wrapped in quotes, brackets or mailto:, and a channel's leading #: the wrapping is not the value.
_WRAPPED_VALUE = re.compile(r"[\"'<(\[]*(?:mailto:)?([\w.+'-]+@[\w-]+(?:\.[\w-]+)+)[\"'>)\]]*(?=[\s.,;:!?]|$)"
                            r"|(?<![\w&])#(?=[a-z][\w-]*)")


def unwrap_values(text: str) -> str:
    """`text` with addresses out of their quotes, brackets and mailto:, and channels without their
    #: "email 'jane@x.test'" and "email jane@x.test", "#general" and "general" read alike."""
    if "@" not in text and "#" not in text:  # nothing _WRAPPED_VALUE can match (most memory lines)
        return text
    return _WRAPPED_VALUE.sub(lambda m: m.group(1) or "", text)


# Words that introduce someone else's words inside the user's message ("Jane wrote: pay …").
REPORTING_VERBS = ("wrote", "writes", "said", "says", "asked", "asks", "told me", "tells me", "emailed",
                   "texted", "replied", "replies", "wants", "demands", "demanded", "claims", "claimed")
_REPORTED = re.compile(r"(?<![\w'])(?:" + "|".join(REPORTING_VERBS) + r")(?: us| me)?\s*[:,]?\s*\"?\s*$")
_FILLER_MARKS = " ,.!?-*•>#"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|;\s*")
# A contrast starts a new scope for negation: "Don't delete it, but archive it", and "Pay INV-7,
# not INV-8" (where the "not" stays with what it negates).
_CONTRAST = re.compile(r",?\s*\b(?:but|however)\b\s*,?\s*|,\s*(?=not\b)")


_SPACES = re.compile(r"[^\S\n]+")
_LINE_BREAK = re.compile(r"\s*\n\s*")


def normalise(text: str) -> str:
    """NFKC, case-folded, curly quotes straightened, whitespace collapsed (a line break stays one:
    it ends a sentence)."""
    text = text or ""
    if not text.isascii():  # ASCII is its own NFKC form
        text = unicodedata.normalize("NFKC", text)
    text = _LINE_BREAK.sub("\n", _SPACES.sub(" ", text.translate(_QUOTES)))
    return text.strip().casefold()


@functools.lru_cache(maxsize=1024)
def _needle_pattern(needle: str) -> re.Pattern:
    # A space in the quote matches a line break in the text (a quote cannot show one).
    body = re.escape(needle).replace(r"\ ", r"[ \n]")
    return re.compile(r"(?<![\w@.-])" + body + r"(?![\w@-]|\.\w)")


def word_spans(needle: str, haystack: str) -> list[tuple[int, int]]:
    """Where `needle` occurs in `haystack` on word boundaries (both already normalised):
    "send" is not in "sender", nor "jane@initech.test" in "jane@initech.test.evil.io"."""
    if not needle:
        return []
    if needle not in haystack and "\n" not in haystack:
        return []  # without a line break in the haystack, a match is the needle itself
    return [(m.start(), m.end()) for m in _needle_pattern(needle).finditer(haystack)]


@dataclass(frozen=True)
class Segment:
    """A sentence, or the part of one after a contrast ("…, but …"): the scope of a negation."""

    start: int
    end: int
    text: str


def segments(text: str) -> list[Segment]:
    found = []
    position = 0
    for sentence in _SENTENCE_END.split(text):
        start = text.find(sentence, position)
        position = start + len(sentence)
        cursor = start
        for match in _CONTRAST.finditer(sentence):
            piece_end = start + match.start()
            if piece_end > cursor:
                found.append(Segment(cursor, piece_end, text[cursor:piece_end]))
            cursor = start + match.end()
        if start + len(sentence) > cursor:
            found.append(Segment(cursor, start + len(sentence), text[cursor:start + len(sentence)]))
    return [s for s in found if s.text.strip()]


def segment_of(text: str, start: int, end: int) -> Segment:
    """The segment a span starts in, stretched to its end when the span crosses into the next."""
    parts = segments(text)
    first = next((s for s in parts if s.start <= start < s.end), Segment(0, len(text), text))
    last = next((s for s in parts if s.start < end <= s.end), first)
    return Segment(first.start, max(first.end, last.end), text[first.start:max(first.end, last.end)])


def _only_courtesy(text: str, words) -> bool:
    """Whether `text` is nothing but these words (and punctuation)."""
    ordered = sorted(words, key=len, reverse=True)
    # List bullets and heading marks ("- ", "* ", "## ") start a line, not a clause.
    rest = text.strip(_FILLER_MARKS)
    while rest:
        word = next((w for w in ordered if rest == w or rest.startswith((w + " ", w + ","))), None)
        if word is None:
            return False
        rest = rest[len(word):].strip(_FILLER_MARKS)
    return True


def _only_time_words(text: str) -> bool:
    """Whether `text` is nothing but time words, adverbs and courtesy ("today", "by Friday", "asap")."""
    words = re.findall(r"[\w:']+", text)
    return bool(words) and all(_is_time_word(w) for w in words)


def _is_time_word(word: str) -> bool:
    return word in TIME_WORDS or (bool(_TIME_TOKEN.fullmatch(word)) and word not in _NOT_ADVERBS)


def _strip_time_words(text: str) -> str:
    """The courtesy left once time words and adverbs are taken out ("Today, please" -> "please")."""
    kept = [w for w in re.findall(r"[\w']+", text) if w in ("please", "kindly") or not _is_time_word(w)]
    return " ".join(kept)


def _clause_prefix(text: str, start: int, segment: Segment) -> str:
    prefix = text[segment.start:start]
    cut = max(prefix.rfind(c) for c in _CLAUSE_PUNCTUATION)
    return prefix[cut + 1:] if cut >= 0 else prefix


def _clause_suffix(text: str, end: int, segment: Segment) -> str:
    suffix = text[end:segment.end]
    cuts = [i for i in (suffix.find(c) for c in _CLAUSE_PUNCTUATION + ".!?") if i >= 0]
    return suffix[:min(cuts)] if cuts else suffix


def _ends_with_joiner(text: str) -> bool:
    return bool(re.search(r"(?<![\w'])(?:" + "|".join(JOINERS) + r")\s*$", text.strip()))


def _starts_with_joiner(text: str) -> bool:
    return bool(re.match(r"^\s*(?:" + "|".join(JOINERS) + r")(?![\w'])", text))


def is_reported(text: str, start: int) -> bool:
    """Whether the words at `start` are someone else's, reported inside this text: inside
    quotation marks, or right after "Jane wrote:", "the vendor says" …"""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    return before.count('"') % 2 == 1 or bool(_REPORTED.search(before))


def is_whole_clause(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] covers a whole clause of `text`, not a fragment of one, and one
    of the writer's own (not someone else's words they report)."""
    if is_reported(text, start):
        return False
    segment = segment_of(text, start, end)
    prefix = _clause_prefix(text, start, segment)
    before_ok = (_only_courtesy(prefix, LEADING_COURTESY) or _ends_with_joiner(prefix)
                 or _only_courtesy(_strip_time_words(prefix), LEADING_COURTESY))
    suffix = _clause_suffix(text, end, segment)
    after_ok = (_only_courtesy(suffix, TRAILING_COURTESY) or _starts_with_joiner(suffix)
                or _only_time_words(suffix))
    return before_ok and after_ok
