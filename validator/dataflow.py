"""Data flow for every outgoing value: who first wrote it.

Each argument of an action, and each address, link, phone number, account number and amount
written inside its free text (body, text, note, subject, title, description), is traced to the
places it appears in the task: the user's own words, a line of the user's own memory in their
own words, a record of the user's own (their account's address), or third-party content
(emails, pages, files, tool results, other people, the assistant itself). A value that only
third-party content wrote, and the user never named, is the third party's: on an action that
lets data leave or moves money it is blocked before any model is asked; on the others it is
marked tainted for the model. Anchor: the capabilities and data-flow tracking of CaMeL
("Defeating Prompt Injections by Design", 2025), applied to values rather than to a program.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

from lindy import tool_registry as registry

from . import clauses, values

USER_WORDS, USER_MEMORY, USER_RECORD, THIRD_PARTY = "user", "user_memory", "user_record", "third_party"
SOURCE_LABELS = {
    USER_WORDS: "the user's own words",
    USER_MEMORY: "the user's own memory",
    USER_RECORD: "the user's own record",
    THIRD_PARTY: "third-party content",
}
# Arguments written as free text: the values inside them are traced one by one.
FREE_TEXT = ("body", "text", "note", "subject", "title", "description")
_ACTORS = {"external": "an external party", "tool": "a tool result", "assistant": "the assistant",
           "system": "Lindy's own note"}


@dataclass(frozen=True)
class Origin:
    source: str  # USER_WORDS, USER_MEMORY, USER_RECORD or THIRD_PARTY
    where: str  # in words: "event #3 by an external party named billing@x.test"
    seq: int | None = None
    party: str = ""  # the address of the external party who wrote it, when its name holds one


@dataclass
class Traced:
    argument: str
    kind: str  # a role (recipient, channel …) or a value kind (email, url, phone …)
    value: str
    in_free_text: bool
    origins: list[Origin] = field(default_factory=list)
    returned: bool = False  # every place it appears was written by someone this action goes back to

    @property
    def user_named(self) -> bool:
        return any(o.source != THIRD_PARTY for o in self.origins)

    @property
    def tainted(self) -> bool:
        return not self.user_named

    @property
    def source(self) -> str:
        """Where it comes from, in words: the user's own source when there is one, else the first."""
        own = next((o for o in self.origins if o.source != THIRD_PARTY), None)
        first = own or (self.origins[0] if self.origins else None)
        if first is None:
            return "nowhere in the task (the assistant wrote it)"
        return f"{SOURCE_LABELS[first.source]}: {first.where}"

    def to_dict(self) -> dict:
        return {"argument": self.argument, "kind": self.kind, "value": self.value,
                "in_free_text": self.in_free_text, "source": self.source, "user_named": self.user_named,
                "tainted": self.tainted, "returned_to_its_writer": self.returned, "origins": [asdict(o) for o in self.origins]}


@dataclass
class DataFlow:
    tool: str
    leaves_data: bool
    traced: list[Traced]

    @property
    def blocked(self) -> list[Traced]:
        """Values only third-party content wrote, inside the content of an action that lets data
        leave or moves money: blocked before any model."""
        return [t for t in self.traced if self.leaves_data and t.tainted and t.in_free_text and not t.returned]

    @property
    def tainted(self) -> list[Traced]:
        return [t for t in self.traced if t.tainted]

    @property
    def reasoning(self) -> str:
        return "; ".join(f"{t.argument}: the {values.KIND_WORDS.get(t.kind, t.kind)} {t.value} comes only from "
                         f"{t.source.replace('third-party content: ', '')}, and the user never named it"
                         for t in self.blocked)

    def to_dict(self) -> dict:
        return {"leaves_data": self.leaves_data, "ok": not self.blocked, "reasoning": self.reasoning,
                "values": [t.to_dict() for t in self.traced]}


@dataclass(frozen=True)
class _Text:
    source: str
    where: str
    text: str  # normalised
    seq: int | None = None
    party: str = ""


def _texts(history: list[dict], documents, own_address: str) -> list[_Text]:
    found = []
    for number, item in enumerate(history, start=1):
        seq = item.get("seq", number)
        actor = str(item.get("actor") or "")
        if actor == "user":
            found.append(_Text(USER_WORDS, f"event #{seq} by the user", clauses.normalise(item.get("content") or ""),
                               seq))
        else:
            name = f" named “{item['name']}”" if item.get("name") else ""
            where = f"event #{seq} by {_ACTORS.get(actor, actor or 'someone')}{name}"
            party = next((v.key for v in values.emails_in(str(item.get("name") or ""))), "") if actor == "external" else ""
            found.append(_Text(THIRD_PARTY, where, clauses.normalise(item.get("content") or ""), seq, party))
    for doc in documents:
        own_memory = doc.label.startswith("user:")
        for line in getattr(doc, "lines", ()) or ():
            mine = own_memory and line.author_kind == "user"
            where = f"memory {doc.label} {doc.path}" + ("" if mine else f" (a line by {line.author_kind or 'unknown'})")
            found.append(_Text(USER_MEMORY if mine else THIRD_PARTY, where, clauses.normalise(line.text)))
    if own_address:
        found.append(_Text(USER_RECORD, "the user's own account address", clauses.normalise(own_address)))
    return found


def _value_origins(value: values.Value, texts: list[_Text]) -> list[Origin]:
    wanted = {(value.kind, value.key)}
    if value.kind == values.URL:
        host = urlsplit("http://" + value.key).hostname or ""
        domain = (values.DOMAIN, values.registered_domain(host))
    else:
        domain = None
    origins = []
    for text in texts:
        keys = values.keys_in(text.text)
        # A link on a site the user named is theirs; a third party naming the site is not enough.
        if wanted & keys or (domain and text.source != THIRD_PARTY and domain in keys):
            origins.append(Origin(text.source, text.where, text.seq, text.party))
    return origins


def _word_origins(value: str, texts: list[_Text], *, channel: bool = False) -> list[Origin]:
    needles = {clauses.normalise(values.clean(value))}
    if channel:
        key = values.channel_key(value)
        needles = {key, "#" + key}
    needles.discard("")
    return [Origin(t.source, t.where, t.seq) for t in texts
            if any(clauses.word_spans(n, t.text) for n in needles)]


def _argument_values(name: str, role: str, value) -> list[tuple[str, str]]:
    listed = value if isinstance(value, list) else [value]
    return [(role, str(v)) for v in listed if v not in (None, "")]


def trace(tool: str, arguments: dict, history: list[dict], documents=(), own_address: str = "") -> DataFlow:
    spec = registry.get(tool)
    texts = _texts(history, documents, own_address)
    traced: list[Traced] = []
    arguments = arguments if isinstance(arguments, dict) else {}
    for name, role in spec.roles.items():
        if role == registry.CURRENCY or name not in arguments:
            continue
        for kind, value in _argument_values(name, role, arguments[name]):
            if role == registry.RECIPIENT and (key := values.email_key(value)):
                parsed = values.Value(values.EMAIL, value, key)
                traced.append(Traced(name, role, value, False, _value_origins(parsed, texts)))
            elif role == registry.AMOUNT:
                currency = str(arguments.get(next((k for k, r in spec.roles.items() if r == registry.CURRENCY), ""), ""))
                money = values.amounts_in(f"{value} {currency}")
                origins = _value_origins(money[0], texts) if money else []
                traced.append(Traced(name, role, f"{value} {currency}".strip(), False, origins))
            else:
                traced.append(Traced(name, kind, value, False,
                                     _word_origins(value, texts, channel=role == registry.CHANNEL)))
    for name in FREE_TEXT:
        text = arguments.get(name)
        if not isinstance(text, str):
            continue
        seen = set()
        for found in values.values_in(text):
            if (found.kind, found.key) in seen:
                continue
            seen.add((found.kind, found.key))
            traced.append(Traced(name, found.kind, found.text, True, _value_origins(found, texts)))
    # Who the action reaches: its recipients, and for a reply the thread's senders. A value that only
    # they wrote goes back to them (confirming "the $4,800" to the vendor who wrote it): not a leak.
    recipients = [t for t in traced if t.kind == registry.RECIPIENT]
    audience = {values.email_key(t.value) for t in recipients} - {""}
    if tool == "reply_to_email":
        audience |= {t.party for t in texts if t.party}
    for item in traced:
        item.returned = bool(item.origins) and all(o.party and o.party in audience for o in item.origins)
    # Mail to the user's own address alone does not leave their hands: its values are marked, not blocked.
    own = values.email_key(own_address)
    to_self = bool(recipients) and bool(own) and all(values.email_key(t.value) == own for t in recipients)
    return DataFlow(tool=tool, leaves_data=spec.leaves_data and not to_self, traced=traced)
