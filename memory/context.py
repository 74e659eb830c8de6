"""What the assistant has in its context for a user: team index + master, user index + master.

The agent loop and the validator read this. (The memory file-system issue fills it from the
live file systems; the signature is the contract.)
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ContextDocument:
    label: str  # e.g. "team:Acme" or "user:user@acme.test"
    path: str  # e.g. "index.md"
    content: str


@dataclass(frozen=True)
class MemoryContext:
    text: str
    tokens: int
    exact: bool  # True when counted by the model's counter, False for the conservative estimate
    documents: list[ContextDocument] = field(default_factory=list)


def context_for(user) -> MemoryContext:
    return MemoryContext(text="", tokens=0, exact=False, documents=[])
