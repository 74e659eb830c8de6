"""index.md and master.md share one always-loaded budget (memory.verifier): the memory pages show
it once, for both, and each of the two files its share of it."""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe

from .models import MemoryFile
from .paths import SPECIAL

_ESTIMATED = ' <abbr title="Conservative estimate (1 token per 3 bytes): no model counter configured">est.</abbr>'


def shared_budget(fs, specials: list[MemoryFile] | None = None) -> dict:
    """index.md and master.md share one always-loaded budget: their tokens together against it,
    with the bar the memory pages show once for both. `specials` are the two rows when the caller
    read them already (the listing's pinned files); otherwise one query reads their counts."""
    if specials is None:
        rows = list(MemoryFile.objects.filter(filesystem=fs, path__in=SPECIAL).values_list("tokens", "tokens_exact"))
    else:
        rows = [(item.tokens, item.tokens_exact) for item in specials]
    tokens = sum(count for count, _ in rows)
    exact = all(is_exact for _, is_exact in rows)
    budget = int(fs.always_loaded_token_budget)
    tokens = int(tokens)
    percent = min(100, round(100 * tokens / budget)) if budget else 100
    over = tokens > budget
    bar: SafeString = mark_safe(  # noqa: S308 (integers and constants only)
        f'<span class="budget" data-shared-budget title="index.md and master.md together: {tokens:,} of {budget:,} tokens">'
        f'<span class="bar{" over" if over else ""}"><span style="width: {percent}%"></span></span>'
        f" <small>{tokens:,} / {budget:,} tokens, index.md and master.md together{'' if exact else _ESTIMATED}</small></span>"
    )
    return {"tokens": tokens, "budget": budget, "percent": percent, "over": over, "exact": exact, "bar": bar}


def special_tokens_note(item) -> SafeString:
    """What a row of index.md or master.md shows in place of its own bar: its share."""
    return mark_safe(f'<small class="muted" data-share>{int(item.tokens):,} tokens of the shared budget</small>')  # noqa: S308
