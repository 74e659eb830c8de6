"""Helpers for validator and agent tests: tasks with scripted histories, a recording user-message
sender for the lindy.seams user_message_sender hook (the `seam` fixture), a memory context with given documents."""

from __future__ import annotations

from lindy import services
from memory.context import ContextDocument, MemoryContext, MemoryLine

SENT: list[dict] = []


def record_user_message(*, user, body: str, channel: str | None = None) -> dict:
    SENT.append({"user": user.email, "body": body, "channel": channel})
    return {"message_id": f"msg-{len(SENT)}", "channel": channel or "imessage"}


def failing_user_message(*, user, body: str, channel: str | None = None) -> dict:
    raise ConnectionError("the messaging provider is down")


RECORDER = record_user_message
FAILING = failing_user_message


def task_with(owner, team, events, title="A task"):
    task = services.task_create(team=team, owner=owner, title=title)
    for event in events:
        actor, content, *rest = event
        services.task_event_add(task=task, actor=actor, content=content, name=rest[0] if rest else "")
    return task


def document(label: str, path: str, content: str, author_kind: str | None = None, author_label: str = ""):
    """A memory document; with `author_kind`, every line of it carries that provenance (without,
    no line has provenance, as before memory records it)."""
    lines = tuple(
        MemoryLine(text=line, author_kind=author_kind, author_label=author_label or label, revision_id=None)
        for line in content.splitlines() if line.strip()
    ) if author_kind else ()
    return ContextDocument(label=label, path=path, content=content, lines=lines)


def memory_with(*documents: tuple):
    """A context_for replacement returning these (label, path, content[, author_kind]) documents."""
    docs = [document(*spec) for spec in documents]

    def context_for(user):
        text = "\n\n".join(f"## {d.label} {d.path}\n{d.content}" for d in docs)
        return MemoryContext(text=text, tokens=len(text) // 3, exact=False, documents=docs)

    return context_for
