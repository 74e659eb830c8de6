"""The registry of hydration sources. Adding a source is one class and one line here."""

from __future__ import annotations

from .base import Fetched, NotConnected, Source, SourceItem
from .gmail import GmailSource
from .meetings import MeetingsSource
from .slack import SlackSource
from .tasks import TasksSource

SOURCES: dict[str, Source] = {
    source.kind: source for source in (SlackSource(), GmailSource(), MeetingsSource(), TasksSource())
}


def sources_for(filesystem) -> list[Source]:
    return [source for source in SOURCES.values() if source.applies_to(filesystem)]


__all__ = ["SOURCES", "Fetched", "NotConnected", "Source", "SourceItem", "sources_for"]
