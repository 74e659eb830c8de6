"""Signals hydration sends for apps above it (it never imports them).

items_stored: sent after the transaction that stored new items of a source commits (email
drafting acts on new Gmail mail); kwargs filesystem_id, source, run_id, new."""

from django.dispatch import Signal

items_stored = Signal()
