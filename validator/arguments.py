"""The action's arguments against what the user authorized: deterministic, before any model.

The tool registry says which argument plays which role (recipient, channel, payee, invoice id,
amount, currency, item id). Each role is checked against the user's own words: the sentences
of their events in this task and the lines of their own memory written in their own words,
leaving out every sentence that negates, refuses or conditions its request. A mismatch is a
hard block that names the argument ("cc: boss@evil.io was never written by the user"); a
model, however persuaded, never sees the action.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation

from lindy import tool_registry as registry

from . import clauses, negation, values

DELETE_WORDS = re.compile(r"(?<![\w-])(delete|remove|trash|erase|get rid of)(?![\w-])")
ARCHIVE_WORDS = re.compile(r"(?<![\w-])archiv\w*")


@dataclass(frozen=True)
class StatedAmount:
    amount: Decimal
    currency: str


def amounts_in(text: str) -> list[StatedAmount]:
    """The amounts with a currency in normalised text: "$480", "480 usd", "€1,200.50", "eur 90"."""
    return [StatedAmount(m.amount, m.currency) for m in values.money_in(text)]


def addresses_in(text: str) -> set[str]:
    """Every email address written in `text`, as values (quotes, brackets, mailto: off)."""
    return {v.key for v in values.emails_in(text)}


@dataclass
class Authorization:
    """The user's own words, sentence by sentence: what the arguments may come from."""

    segments: list[str] = field(default_factory=list)  # normalised, not negated
    negated: list[tuple[str, str]] = field(default_factory=list)  # (segment, cue)
    ordered: list[tuple[str, str]] = field(default_factory=list)  # every segment, oldest first, with its cue or ""
    participants: set[str] = field(default_factory=set)  # addresses of external senders in the thread
    own_address: str = ""

    def addresses(self) -> set[str]:
        found = {a for s in self.segments for a in addresses_in(s)}
        return found | ({self.own_address} if self.own_address else set())

    def words(self, value: str) -> bool:
        return any(clauses.word_spans(value, s) for s in self.segments)

    def negated_cue(self, value: str) -> str:
        return next((cue for s, cue in self.negated if clauses.word_spans(value, s)), "")

    def retracted(self, value: str, *, address: bool = False) -> str:
        """The cue, when the user's latest mention of `value` negates it ("Pay INV-7 … Actually,
        don't pay INV-7"): their latest word wins. "" otherwise."""
        mentions = [cue for s, cue in self.ordered
                    if (value in addresses_in(s) if address else clauses.word_spans(value, s))]
        return mentions[-1] if mentions else ""


def user_texts(history: list[dict], documents) -> list[str]:
    """What the user wrote: their events in this task, and the lines of their own memory that
    provenance says are their own words (a line without provenance is not)."""
    texts = []
    for doc in documents:  # standing words first: the task's newer words come after them
        if doc.label.startswith("user:"):
            texts += [line.text for line in getattr(doc, "lines", ()) or () if line.author_kind == "user"]
    return texts + [item.get("content") or "" for item in history if item.get("actor") == "user"]


def authorization(history: list[dict], documents=(), own_address: str = "", tool: str = "") -> Authorization:
    auth = Authorization(own_address=values.email_key(own_address) or clauses.normalise(own_address))
    for text in user_texts(history, documents):
        normalised = clauses.normalise(text)
        for segment in clauses.segments(normalised):
            cue = negation.negated(segment.text, tool=tool)
            auth.ordered.append((segment.text, cue.cue if cue else ""))
            if cue is None:
                auth.segments.append(segment.text)
            else:
                auth.negated.append((segment.text, cue.cue))
    for item in history:
        if item.get("actor") == "external":
            auth.participants |= addresses_in(clauses.normalise(item.get("name") or ""))
    return auth


@dataclass
class ArgumentResult:
    argument: str
    role: str
    value: str
    ok: bool
    reason: str = ""


@dataclass
class ArgumentCheck:
    results: list[ArgumentResult]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> list[ArgumentResult]:
        return [r for r in self.results if not r.ok]

    @property
    def reasoning(self) -> str:
        return "; ".join(f"{r.argument}: {r.reason}" for r in self.failures)

    @property
    def suggestion(self) -> str:
        archive = next((r for r in self.failures if r.role == registry.ITEM_ID and "asked to archive" in r.reason),
                       None)
        if archive is not None:
            return f"Archive {archive.value} instead: the user asked to archive it, not to delete it."
        return ""

    def to_dict(self) -> dict:
        return {"ok": self.ok, "results": [asdict(r) for r in self.results], "reasoning": self.reasoning,
                "suggestion": self.suggestion}


def _scripts(text: str) -> set[str]:
    return {unicodedata.name(ch, "?").split(" ")[0] for ch in text if ch.isalpha()}


def _lookalike(value: str) -> str:
    """Why an address or name is a look-alike, or "": letters of several scripts in one word
    (a Cyrillic "і" in "initech"), or anything but ASCII in an email domain."""
    if "@" in value:
        domain = value.rsplit("@", 1)[1]
        if not domain.isascii():
            return "its domain has non-ASCII (look-alike) characters"
    for word in re.split(r"[\s@.]+", value):
        if len(_scripts(word)) > 1:
            return "it mixes letters of different scripts (a look-alike)"
    return ""


def _not_written(value: str, auth: Authorization, what: str = "was never written by the user") -> str:
    cue = auth.negated_cue(clauses.normalise(value))
    if cue:
        return f"{value} appears only where the user said “{cue}”"
    return f"{value} {what}"


_DISPLAY_NAME = re.compile(r"^[^<>]*<([^<>]+@[^<>]+)>$")


def _recipient(argument: str, value: str, auth: Authorization, tool: str) -> ArgumentResult:
    # "Jane Park <jane@initech.test>": the address is what receives it; the name is decoration.
    # Quotes, brackets, trailing punctuation and mailto: are wrapping, not part of it.
    named = _DISPLAY_NAME.match(value.strip())
    address = named.group(1) if named else values.clean(value)
    key = values.email_key(address)
    normalised = key or clauses.normalise(address)
    result = ArgumentResult(argument, registry.RECIPIENT, value, ok=False)
    if not normalised:
        result.reason = "an empty recipient"
    elif why := _lookalike(unicodedata.normalize("NFKC", address.strip())):
        result.reason = f"{value} is refused: {why}"
    elif "@" in normalised and not key:
        result.reason = f"{value} is not a valid email address"
    elif "@" in normalised:
        allowed = auth.addresses() | (auth.participants if tool == "reply_to_email" else set())
        result.ok = normalised in allowed
        if result.ok and normalised != auth.own_address and (cue := auth.retracted(normalised, address=True)):
            result.ok = False
            result.reason = f"{value}: the user's latest words about it say “{cue}”"
        elif not result.ok:
            where = " nor is it a participant of the thread" if tool == "reply_to_email" else ""
            result.reason = _not_written(value, auth, f"was never written by the user{where}")
    else:
        result.ok = auth.words(normalised)
        result.reason = "" if result.ok else _not_written(value, auth)
    return result


def _named(argument: str, role: str, value: str, auth: Authorization) -> ArgumentResult:
    """Payee, invoice id, channel: exactly the user's words, as whole words."""
    normalised = clauses.normalise(values.clean(value))
    result = ArgumentResult(argument, role, value, ok=False)
    if not normalised:
        result.reason = "empty: the user must name it"
        return result
    if why := _lookalike(unicodedata.normalize("NFKC", value.strip())):
        result.reason = f"{value} is refused: {why}"
        return result
    candidates = {normalised}
    if role == registry.CHANNEL:
        # "#general" and "general" are one channel, whichever the user wrote.
        channel = values.channel_key(value)
        candidates = {channel, "#" + channel}
    result.ok = any(auth.words(c) for c in candidates)
    if not result.ok:
        result.reason = _not_written(value, auth, "was never named by the user (as whole words)")
    elif role != registry.PAYEE and (cue := next(filter(None, (auth.retracted(c) for c in candidates)), "")):
        # An id or a channel the user named and then took back. (Not a payee: "pay Northwind's
        # INV-7, not their INV-8" names the payee in both.)
        result.ok = False
        result.reason = f"{value}: the user's latest words about it say “{cue}”"
    return result


def _money(arguments: dict, roles: dict, auth: Authorization) -> list[ArgumentResult]:
    amount_arg = next((k for k, r in roles.items() if r == registry.AMOUNT), None)
    currency_arg = next((k for k, r in roles.items() if r == registry.CURRENCY), None)
    invoice_arg = next((k for k, r in roles.items() if r == registry.INVOICE_ID), None)
    if amount_arg is None:
        return []
    raw = arguments.get(amount_arg)
    currency = clauses.normalise(str(arguments.get(currency_arg, "") if currency_arg else "")).upper()
    try:
        amount = Decimal(str(raw))
    except InvalidOperation:
        return [ArgumentResult(amount_arg, registry.AMOUNT, str(raw), False, "not a number")]
    if amount <= 0:
        return [ArgumentResult(amount_arg, registry.AMOUNT, str(raw), False, "must be more than zero")]
    # Each amount belongs to the item written beside it: in "INV-7 for $480 and INV-8 for $5,000"
    # INV-7 is limited by $480, whatever else the sentence says.
    invoice = clauses.normalise(values.clean(str(arguments.get(invoice_arg, "")))) if invoice_arg else ""
    said = amounts_for(invoice, auth.segments)
    value = f"{raw:g}" if isinstance(raw, float) else str(raw)
    if not said:
        return [ArgumentResult(amount_arg, registry.AMOUNT, value, False,
                               f"{value} {currency}: the user named no amount with a currency")]
    same = [m for m in said if m.currency == currency]
    results = []
    if currency_arg:
        if same:
            results.append(ArgumentResult(currency_arg, registry.CURRENCY, currency, True))
        else:
            named = ", ".join(sorted({m.currency for m in said}))
            return [ArgumentResult(currency_arg, registry.CURRENCY, currency, False,
                                   f"{currency or '(none)'} but the user authorized {named}")]
    ceiling = max(m.amount for m in same)
    if amount > ceiling:
        results.append(ArgumentResult(amount_arg, registry.AMOUNT, value, False,
                                      f"{value} {currency} is more than the {ceiling:,} {currency} the user authorized"))
    else:
        results.append(ArgumentResult(amount_arg, registry.AMOUNT, value, True))
    return results


# An item's reference: letters and digits in one token ("INV-7", "nw-2291", "msg_12").
# (Not "Q3", nor "5pm": a letter prefix then a separator or two digits.)
_ITEM_REF = re.compile(r"(?<![\w@./-])[a-z]+(?:[-_#]\d+|\d{2,})[\w-]*(?<![.-])", re.I)
# Where one item's part of a sentence ends and the next one's starts.
_ITEM_BREAK = re.compile(r",\s|;|\s(?:and|then|plus|also)\s")


def _pieces(segment: str) -> list[str]:
    return [p for p in _ITEM_BREAK.split(segment) if p.strip()]


def _refs(piece: str, money) -> set[str]:
    taken = [(m.start, m.end) for m in money]
    return {m.group(0).casefold() for m in _ITEM_REF.finditer(piece)
            if not any(s < m.end() and m.start() < e for s, e in taken)}


def amounts_for(item: str, segments: list[str]) -> list[StatedAmount]:
    """The amounts the user wrote for `item` (normalised): those in the part of a sentence that
    names it and no other item; failing that, the amounts no other item claims."""
    own, free = [], []
    for segment in segments:
        for piece in _pieces(segment):
            money = values.money_in(piece)
            if not money:
                continue
            refs = _refs(piece, money)
            found = [StatedAmount(m.amount, m.currency) for m in money]
            if item and refs == {item}:
                own += found
            elif not refs - ({item} if item else set()):
                free += found
    return own or free


# What a read says about what it returned, beside the kind's own nouns ("Subject:", "Attendees:").
_READ_HINTS = {
    registry.EMAIL_MESSAGE: ("subject", "from", "sender", "to", "cc", "received"),
    registry.CALENDAR_EVENT: ("start", "end", "attendees", "location"),
    registry.FILE: ("filename", "size", "shared", "owner"),
}
_FILE_NAME = re.compile(r"(?<![\w@])[\w-]+\.(?:pdf|docx?|xlsx?|csv|pptx?|txt|md|zip|png|jpe?g|json)(?!\w)")


def _a(kind: str) -> str:
    return ("an " if kind[:1] in "aeiou" else "a ") + kind


def names_kind(text: str, kind: str, *, hints: bool = False) -> bool:
    """Whether normalised `text` names this kind of thing ("the email", "my meeting", "report.pdf")."""
    words = registry.KIND_NOUNS.get(kind, ()) + (_READ_HINTS.get(kind, ()) if hints else ())
    if any(clauses.word_spans(word, text) for word in words):
        return True
    return kind == registry.FILE and bool(_FILE_NAME.search(text))


def kinds_named(text: str, *, hints: bool = False) -> set[str]:
    return {kind for kind in registry.KIND_NOUNS if names_kind(text, kind, hints=hints)}


def _verb_segments(tool: str, auth: Authorization) -> list[str]:
    from .offline import VERBS  # the verbs that ask for each tool, one list for code and offline rule

    verbs = VERBS.get(tool, ())
    return [s for s in auth.segments if any(clauses.word_spans(v, s) for v in verbs)]


def _wrong_object(value: str, tool: str, kind: str, auth: Authorization) -> str:
    """Why the user's clause asks for this verb on another kind of thing ("the user asked to
    delete a file, not an email message"), or ""."""
    clauses_asking = _verb_segments(tool, auth)
    key = clauses.normalise(value)
    if not clauses_asking or any(names_kind(s, kind) or (key and clauses.word_spans(key, s)) for s in clauses_asking):
        return ""
    others = sorted(set().union(*(kinds_named(s) for s in clauses_asking)) - {kind})
    if not others:
        return ""
    return (f"the user's words ask for it on {' or '.join(map(_a, others))}, not on {value} ({_a(kind)}): "
            f"“{clauses_asking[0]}”")


def _read_as(value: str, kind: str, history: list[dict]) -> tuple[bool, set[str]]:
    """Whether a read in the task (a tool result, a message the agent was shown) returned `value`
    as this kind of thing; and the other kinds it was returned as."""
    key = clauses.normalise(value)
    other: set[str] = set()
    for item in history:
        if item.get("actor") == "user":
            continue
        text = clauses.normalise(item.get("content") or "")
        for start, _ in clauses.word_spans(key, text):
            line = text[text.rfind("\n", 0, start) + 1:text.find("\n", start) % (len(text) + 1) or len(text)]
            context = line + " " + clauses.normalise(item.get("name") or "")
            if names_kind(context, kind, hints=True):
                return True, set()
            found = kinds_named(context, hints=True) or kinds_named(text)
            if found == {kind}:
                return True, set()
            other |= found - {kind}
    return False, other


def _item(argument: str, value: str, tool: str, auth: Authorization, history: list[dict]) -> ArgumentResult:
    """The thing acted on: one the user named, or one a read returned as the kind the tool acts on;
    and deleting when the user said archive is a different action (archive is recoverable)."""
    result = ArgumentResult(argument, registry.ITEM_ID, value, ok=True)
    kind = registry.get(tool).acts_on
    cleaned = values.clean(value)
    if not cleaned:
        result.ok, result.reason = False, "empty: the user must name what it acts on"
        return result
    if kind and (why := _wrong_object(cleaned, tool, kind, auth)):
        result.ok, result.reason = False, why
        return result
    if kind and not auth.words(clauses.normalise(cleaned)):
        returned, other = _read_as(cleaned, kind, history)
        if not returned:
            result.ok = False
            result.reason = (f"{value} was returned as {' or '.join(map(_a, sorted(other)))}, not {_a(kind)}"
                             if other else f"{value} was never named by the user, nor returned by a read as {_a(kind)}")
            return result
    if not tool.startswith("delete_"):
        return result
    said_archive = any(ARCHIVE_WORDS.search(s) for s in auth.segments) or any(
        ARCHIVE_WORDS.search(s) for s, _ in auth.negated)
    said_delete = any(DELETE_WORDS.search(s) for s in auth.segments)
    if said_archive and not said_delete:
        result.ok = False
        result.reason = f"the user asked to archive {value}, not to delete it; deleting cannot be undone"
    return result


def check(tool: str, arguments: dict, history: list[dict], documents=(), own_address: str = "") -> ArgumentCheck:
    spec = registry.get(tool)
    roles = dict(spec.roles)
    auth = authorization(history, documents, own_address, tool)
    results: list[ArgumentResult] = []
    for argument, role in roles.items():
        if argument not in arguments and role not in (registry.INVOICE_ID, registry.PAYEE):
            continue
        value = arguments.get(argument)
        if role == registry.RECIPIENT:
            listed = value if isinstance(value, list) else [value]
            results += [_recipient(argument, str(v or ""), auth, tool) for v in listed]
        elif role in (registry.PAYEE, registry.INVOICE_ID, registry.CHANNEL):
            results.append(_named(argument, role, str(value or ""), auth))
        elif role == registry.ITEM_ID:
            results.append(_item(argument, str(value or ""), tool, auth, history))
    results += _money(arguments, roles, auth)
    return ArgumentCheck(results)
