"""The one interface every hydration source implements.

A source is given a file system and the cursor its last successful fetch returned, and
answers "what happened since?" as items plus the cursor to start from next time:

    class Meetings(Source):
        kind = "meetings"
        def fetch(self, filesystem, cursor) -> Fetched: ...

Raise `NotConnected` when the source cannot run for this file system yet (no account, no
token): that is a status for people to act on, not an error to retry. Any other exception
is a failure: recorded, the cursor stays, and the next run tries again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime

# The one "connect it first" error, for every source (Slack too): a run reports it one way.
from google_workspace.errors import NotConnected as NotConnected


@dataclass(frozen=True)
class SourceItem:
    external_id: str
    text: str
    occurred_at: datetime
    author: str = ""
    title: str = ""
    reference: str = ""
    # Whose words these are (hydration.models.Item.AuthorKind); a source that cannot tell
    # leaves it blank, which never counts as the owner's.
    author_kind: str = ""
    author_name: str = ""


@dataclass
class Fetched:
    items: list[SourceItem] = field(default_factory=list)
    cursor: dict = field(default_factory=dict)


class Source(ABC):
    kind: str = ""
    # Which file systems the source feeds: {"user"}, {"team"} or both.
    scopes: frozenset[str] = frozenset({"user", "team"})

    def applies_to(self, filesystem) -> bool:
        return filesystem.kind in self.scopes

    @abstractmethod
    def fetch(self, filesystem, cursor: dict) -> Fetched:
        """Items since `cursor`, and the cursor to start from next time."""

    def describe(self, filesystem) -> list[str]:
        """What this source reads for the file system, in words for the sources page."""
        return []
