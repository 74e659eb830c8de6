"""One bound for every list the API answers: `limit` 1..100 and `offset` 0..100,000.

A larger offset is refused (422) rather than served: the database would scan and throw away
that many rows, and a number past 64 bits reaches PostgreSQL as an error (a 500). Lists use
`BoundedLimitOffset` with ninja's @paginate, or `PageIn` as `Query[PageIn]` when the view
slices by hand (`queryset[page.slice]`).
"""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 100
MAX_OFFSET = 100_000
DEFAULT_LIMIT = 100

LIMIT_HELP = f"How many items, 1..{MAX_LIMIT}."
OFFSET_HELP = f"How many items to skip, 0..{MAX_OFFSET:,}."


class PageIn(Schema):
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description=LIMIT_HELP)
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description=OFFSET_HELP)

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.limit)


class BoundedLimitOffset(LimitOffsetPagination):
    """ninja's limit/offset pagination ({"items": [...], "count": n}) with the bounds above."""

    Input = PageIn  # type: ignore[assignment]  # same fields as ninja's Input, bounded

    def __init__(self, **kwargs):
        super().__init__(max_limit=MAX_LIMIT, **kwargs)
