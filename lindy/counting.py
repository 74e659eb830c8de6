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
    a cache, say). With `deferred_join`, a page is read by a deferred join (`page_rows`): for a
    plain model queryset whose filter and order an index holds."""

    def __init__(self, queryset: QuerySet, per_page: int, asked: int, ahead: int | None = None,
                 counter: Callable[[int], int] | None = None, deferred_join: bool = False):
        super().__init__(queryset, per_page)
        self.deferred_join = deferred_join
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

    def page(self, number):
        if not self.deferred_join:
            return super().page(number)
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = min(bottom + self.per_page, self.count)
        return self._get_page(page_rows(self.queryset, bottom, top), number, self)


def page_rows(queryset: QuerySet, bottom: int, top: int) -> QuerySet:
    """Rows bottom..top of an ordered queryset, by a deferred join: `pk IN (ids[bottom:top])`.

    A plain OFFSET reads every skipped row from the table (an index scan fetches each one before
    the LIMIT drops it); the ids alone come from an index-only scan when an index holds the
    filter and the order, so page 40 reads 20 rows, not 800. The outer query has no filter but the
    ids: repeated there, the planner may scan all the user's rows to semi-join the 20."""
    ids = queryset.values("pk")[bottom:top]
    rows = queryset.model._base_manager.filter(pk__in=ids).order_by(*queryset.query.order_by)
    rows.query.select_related = queryset.query.select_related  # the same related rows, joined
    rows.query.deferred_loading = queryset.query.deferred_loading
    return rows


class CountedPaginator(Paginator):
    """A Paginator told its count, so a page costs the rows it shows and no COUNT."""

    count_is_capped = False

    def __init__(self, object_list, per_page: int, count: int):
        super().__init__(object_list, per_page)
        self.known_count = count

    @cached_property
    def count(self) -> int:
        return self.known_count
