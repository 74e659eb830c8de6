"""Bounded counts for long lists: a user may have 100,000 decisions or a memory 5,000 files, and
counting every row on every page (Paginator, the API's `count`, the navigation badge) costs more
than the page itself.

Each count stops at a cap that moves with the page asked for, so "Older →" always works and the
total reads "1,000+" once it is past what a person would page through. A list whose count is
already known (kept per revision, say) passes it to `CountedPaginator` and runs no COUNT."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from django.core.paginator import Paginator
from django.db.models import QuerySet

# How many rows past the page asked for are counted before the total becomes "N+".
COUNT_AHEAD = 1000
# The deepest page served: beyond it the database would skip that many rows on every request.
MAX_PAGE = 5000


def capped_count(queryset: QuerySet, cap: int) -> int:
    """min(rows, cap) in one `SELECT COUNT(*) FROM (... LIMIT cap)`: the scan stops at the cap."""
    return queryset.order_by().values("pk")[:cap].count()


def page_number(raw: str | None) -> int:
    """The page asked for; anything that isn't a page number is the first page (as Paginator.get_page)."""
    try:
        number = int(raw or 1)
    except (TypeError, ValueError):
        return 1
    return max(1, min(number, MAX_PAGE))


class CappedPaginator(Paginator):
    """A Paginator whose count stops `ahead` rows (COUNT_AHEAD unless given) past the page asked
    for (`count_is_capped`). `counter(cap)`, when given, counts instead of a COUNT query (from
    a cache, say)."""

    def __init__(self, queryset: QuerySet, per_page: int, asked: int, ahead: int | None = None,
                 counter: Callable[[int], int] | None = None):
        super().__init__(queryset, per_page)
        self.queryset = queryset
        self.cap = asked * per_page + (COUNT_AHEAD if ahead is None else ahead)
        self.counter = counter

    @cached_property
    def count(self) -> int:
        if self.counter is not None:
            return self.counter(self.cap)
        return capped_count(self.queryset, self.cap)

    @property
    def count_is_capped(self) -> bool:
        return self.count >= self.cap


class CountedPaginator(Paginator):
    """A Paginator told its count, so a page costs the rows it shows and no COUNT."""

    count_is_capped = False

    def __init__(self, object_list, per_page: int, count: int):
        super().__init__(object_list, per_page)
        self.known_count = count

    @cached_property
    def count(self) -> int:
        return self.known_count
