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

from . import clauses, negation

EMAIL = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+")
DELETE_WORDS = re.compile(r"(?<![\w-])(delete|remove|trash|erase|get rid of)(?![\w-])")
ARCHIVE_WORDS = re.compile(r"(?<![\w-])archiv\w*")

# Unambiguous money only: a symbol or an ISO code or a currency word next to the number.
# "5k", "1.200,50" and a bare "480" are not read as an authorized amount.
SYMBOLS = {"$": "USD", "us$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "chf": "CHF"}
CODES = ("usd", "eur", "gbp", "chf", "cad", "aud", "jpy")
WORDS = {"dollars": "USD", "dollar": "USD", "euros": "EUR", "euro": "EUR", "pounds": "GBP"}
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_END = r"(?!\w|[.,]\d)"  # not "5k", not the "1.200" of "1.200,50"
_SYMBOL = "|".join(re.escape(s) for s in sorted(SYMBOLS, key=len, reverse=True))
_CODE = "|".join(CODES)
_WORD = "|".join(sorted(WORDS, key=len, reverse=True))
AMOUNTS = re.compile(
    rf"(?<!\w)(?:(?P<sym>{_SYMBOL}|{_CODE})\s?(?P<n1>{_NUM}){_END}"
    rf"|(?P<n2>{_NUM}){_END}\s?(?P<code>{_CODE}|{_WORD})(?!\w))"
)


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str


def amounts_in(text: str) -> list[Money]:
    """The amounts with a currency in normalised text: "$480", "480 usd", "€1,200.50", "eur 90"."""
    found = []
    for match in AMOUNTS.finditer(text):
        number = (match.group("n1") or match.group("n2")).replace(",", "")
        unit = match.group("sym") or match.group("code")
        currency = SYMBOLS.get(unit) or WORDS.get(unit) or unit.upper()
        try:
            found.append(Money(Decimal(number), currency))
        except InvalidOperation:
            continue
    return found


@dataclass
class Authorization:
    """The user's own words, sentence by sentence: what the arguments may come from."""

    segments: list[str] = field(default_factory=list)  # normalised, not negated
    negated: list[tuple[str, str]] = field(default_factory=list)  # (segment, cue)
    ordered: list[tuple[str, str]] = field(default_factory=list)  # every segment, oldest first, with its cue or ""
    participants: set[str] = field(default_factory=set)  # addresses of external senders in the thread
    own_address: str = ""

    def addresses(self) -> set[str]:
        found = {a for s in self.segments for a in EMAIL.findall(s)}
        return found | ({self.own_address} if self.own_address else set())

    def words(self, value: str) -> bool:
        return any(clauses.word_spans(value, s) for s in self.segments)

    def negated_cue(self, value: str) -> str:
        return next((cue for s, cue in self.negated if clauses.word_spans(value, s)), "")

    def retracted(self, value: str, *, address: bool = False) -> str:
        """The cue, when the user's latest mention of `value` negates it ("Pay INV-7 … Actually,
        don't pay INV-7"): their latest word wins. "" otherwise."""
        mentions = [cue for s, cue in self.ordered
                    if (value in EMAIL.findall(s) if address else clauses.word_spans(value, s))]
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
    auth = Authorization(own_address=clauses.normalise(own_address))
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
            auth.participants |= set(EMAIL.findall(clauses.normalise(item.get("name") or "")))
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
        archive = next((r for r in self.failures if r.role == registry.ITEM_ID), None)
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
    named = _DISPLAY_NAME.match(value.strip())
    address = named.group(1) if named else value
    normalised = clauses.normalise(address)
    result = ArgumentResult(argument, registry.RECIPIENT, value, ok=False)
    if not normalised:
        result.reason = "an empty recipient"
    elif why := _lookalike(unicodedata.normalize("NFKC", address.strip())):
        result.reason = f"{value} is refused: {why}"
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
    normalised = clauses.normalise(value)
    result = ArgumentResult(argument, role, value, ok=False)
    if not normalised:
        result.reason = "empty: the user must name it"
        return result
    if why := _lookalike(unicodedata.normalize("NFKC", value.strip())):
        result.reason = f"{value} is refused: {why}"
        return result
    candidates = {normalised}
    if role == registry.CHANNEL:
        candidates |= {"#" + normalised.lstrip("#")}
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
    # The amounts said next to this invoice if any, else every amount the user wrote.
    invoice = clauses.normalise(str(arguments.get(invoice_arg, ""))) if invoice_arg else ""
    near = [m for s in auth.segments if invoice and clauses.word_spans(invoice, s) for m in amounts_in(s)]
    said = near or [m for s in auth.segments for m in amounts_in(s)]
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


def _item(argument: str, value: str, tool: str, auth: Authorization) -> ArgumentResult:
    """Deleting when the user said archive is a different action (archive is recoverable)."""
    result = ArgumentResult(argument, registry.ITEM_ID, value, ok=True)
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
            values = value if isinstance(value, list) else [value]
            results += [_recipient(argument, str(v or ""), auth, tool) for v in values]
        elif role in (registry.PAYEE, registry.INVOICE_ID, registry.CHANNEL):
            results.append(_named(argument, role, str(value or ""), auth))
        elif role == registry.ITEM_ID:
            results.append(_item(argument, str(value or ""), tool, auth))
    results += _money(arguments, roles, auth)
    return ArgumentCheck(results)
