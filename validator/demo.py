"""Demo data for the eval matrix page: the offline row of the matrix, actually run (the offline
rules judging every case through the gateway), once. Nothing here writes a result by hand."""

from __future__ import annotations

from lindy.demo import require

from . import eval_matrix, eval_suite
from .models import EvalCell, EvalMatrix


def seed(ctx) -> None:
    if EvalMatrix.objects.exists():
        return
    matrix = eval_matrix.matrix_create(targets=[eval_suite.OFFLINE_TARGET], actor=ctx.users.get("ops@lindy.test"))
    matrix = eval_matrix.matrix_run_here(matrix)
    failed = [str(cell) for cell in matrix.cells.filter(status=EvalCell.Status.FAILED)]
    require("validator evals", not failed, f"eval cells failed: {', '.join(failed)}")
