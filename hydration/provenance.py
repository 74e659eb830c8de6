"""Whose words hydration summarizes: how an item is attributed in the summarizer's prompt, and
what a run's revision records about the items behind it (memory.blame turns that into each
line's author: only a revision made from the owner's own words alone is the user's).

    attribution(item)        -> "Jane Park (external)", or None for the owner's own words
    words_of(items)          -> ("others", "Jane Park's email (external)")
"""

from __future__ import annotations

from email.utils import parseaddr

from memory.models import Revision

from .models import Item, SourceKind

AuthorKind = Item.AuthorKind
WordsOf = Revision.WordsOf
MAX_NAMED = 3  # authors named in a revision's words_from; the rest are counted

# What one item of each source is, in words ("Jane Park's email").
_NOUN = {SourceKind.GMAIL: "email", SourceKind.SLACK: "Slack messages", SourceKind.MEETINGS: "meeting notes",
         SourceKind.TASKS: "assistant task"}
_OWN_NOUN = {SourceKind.GMAIL: "sent email", SourceKind.SLACK: "Slack messages",
             SourceKind.MEETINGS: "meeting notes", SourceKind.TASKS: "assistant tasks"}
_RELATION = {AuthorKind.TEAMMATE: "teammate", AuthorKind.EXTERNAL: "external", AuthorKind.MIXED: "several people"}


def display_name(author: str) -> str:
    """'Jane Park <jane@initech.test>' -> 'Jane Park'; a bare address stays as it is."""
    name, address = parseaddr(author or "")
    return (name or address or author or "someone").strip()


def is_owners(item) -> bool:
    return item.author_kind == AuthorKind.OWNER


def _who(item) -> tuple[str, str]:
    if item.author_kind == AuthorKind.ASSISTANT:
        return "The assistant", "for the user"
    # A blank author kind (not known to be a teammate) is named as external.
    return item.author_name or display_name(item.author), _RELATION.get(item.author_kind, "external")


def attribution(item) -> str | None:
    """Who to name when a fact comes from this item: None for the owner's own words."""
    if is_owners(item):
        return None
    name, relation = _who(item)
    return f"{name} ({relation})"


def words_of(items) -> tuple[str, str]:
    """(Revision.words_of, words_from) for a revision made from `items`: "owner" only when
    every one of them holds the owner's own words."""
    items = list(items)
    own = [i for i in items if is_owners(i)]
    others = [i for i in items if not is_owners(i)]
    if own and not others:
        kind = WordsOf.OWNER
    elif own:
        kind = WordsOf.MIXED
    else:
        kind = WordsOf.OTHERS
    phrases: list[str] = []
    for item in own:
        phrase = ("your " if kind == WordsOf.MIXED else "") + _OWN_NOUN.get(item.source, item.source)
        if phrase not in phrases:
            phrases.append(phrase)
    for item in others:
        name, relation = _who(item)
        if item.author_kind == AuthorKind.MIXED:  # already names what it is (a task's transcript)
            phrase = f"{name} ({relation})"
        else:
            phrase = f"{name}'s {_NOUN.get(item.source, item.source)} ({relation})"
        if phrase not in phrases:
            phrases.append(phrase)
    named, more = phrases[:MAX_NAMED], len(phrases) - MAX_NAMED
    if more > 0:
        text = ", ".join(named) + f" and {more} more"
    elif len(named) > 1:
        text = ", ".join(named[:-1]) + " and " + named[-1]
    else:
        text = "".join(named)
    return kind, text[:300]
