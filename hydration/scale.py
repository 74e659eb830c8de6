"""Many file systems with their schedule rows, inserted in bulk: the dispatch tests and
`make bench` measure the tick against these (bulk_create skips the per-row signal on purpose)."""

from __future__ import annotations

from datetime import timedelta

from lindy.models import Team
from memory.models import FileSystem

from .models import Schedule


def schedules_insert(count: int, *, due_at, spread: timedelta = timedelta(0), prefix: str = "scale",
                     chunk: int = 5000) -> list[int]:
    """`count` team file systems whose next run is due at `due_at` (+ i/count of `spread`).
    Returns the file system ids."""
    ids: list[int] = []
    for start in range(0, count, chunk):
        size = min(chunk, count - start)
        teams = Team.objects.bulk_create([Team(name=f"{prefix}-{start + i}") for i in range(size)])
        systems = FileSystem.objects.bulk_create([FileSystem(kind=FileSystem.Kind.TEAM, team=t) for t in teams])
        Schedule.objects.bulk_create([
            Schedule(filesystem=fs, next_run_at=due_at + spread * ((start + i) / count))
            for i, fs in enumerate(systems)])
        ids += [fs.pk for fs in systems]
    return ids
