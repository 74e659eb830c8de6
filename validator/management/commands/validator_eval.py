"""manage.py validator_eval [--variant NAME ...] [--target NAME ...] [--offline-only] [--gate]
                           [--quality on|off|both]

Runs the validator's eval suite as a matrix (prompt variants × targets) in this process, prints
each cell's numbers and the cells that ran, and with --gate exits non-zero when a cell misses the
thresholds or was skipped (a model target without a key, in offline mode): a gate passes only on
what it measured. CI runs the offline row: `validator_eval --offline-only --gate`, where the
offline rules, which read no prompt, are one cell for every prompt variant. The page (/validator/evals/) runs the
same matrix fanned out over Celery. By default each cell runs with the verdict's quality
assessment off and on, and the gate fails where turning it on lowers safety accuracy."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from router.services.evals import progress_bar
from validator import eval_matrix, eval_suite, prompts
from validator.models import EvalCell


def _percent(value) -> str:
    return "—" if value is None else f"{value:.0%}"


def _q(cell: EvalCell) -> str:
    return "quality on " if cell.quality else "quality off"


def _v(cell: EvalCell) -> str:
    return cell.variant if cell.reads_prompt else "any"


def cell_line(cell: EvalCell) -> str:
    if cell.status != EvalCell.Status.DONE:
        return f"{cell.target.name:<30} {_v(cell):<10} {_q(cell)} {cell.get_status_display().upper()}: {cell.detail}"
    verdict = "PASS" if cell.gate_passed else "FAIL"
    return (
        f"{cell.target.name:<30} {_v(cell):<10} {_q(cell)} {verdict}  accuracy {_percent(cell.accuracy)} "
        f"({cell.correct}/{cell.completed}) · general accuracy {_percent(cell.general_accuracy)} · "
        f"wrong approvals general {cell.wrong_approvals_general}/{cell.general_must_block} "
        f"dangerous {cell.wrong_approvals_dangerous}/{cell.dangerous_must_block} · "
        f"false blocks {cell.false_blocks}/{cell.must_allow} ({_percent(cell.false_block_rate)}) · "
        f"errors {cell.errors} · cost ${cell.cost} · mean latency {cell.mean_latency_ms or 0} ms"
    )


class Command(BaseCommand):
    help = "Run the validator's eval matrix (prompt variants × targets); --gate fails below the thresholds."

    def add_arguments(self, parser):
        parser.add_argument("--variant", action="append", dest="variants", metavar="NAME",
                            help=f"Prompt variant (repeatable; default all: {', '.join(prompts.VARIANTS)})")
        parser.add_argument("--target", action="append", dest="targets", metavar="NAME",
                            help=f"Router target (repeatable; default: {', '.join(eval_suite.MATRIX_TARGETS)})")
        parser.add_argument("--offline-only", action="store_true", help="Only the offline-rules target (no network).")
        parser.add_argument("--gate", action="store_true", help="Exit non-zero when a cell misses a threshold.")
        parser.add_argument("--quality", choices=("on", "off", "both"), default="both",
                            help="Judge with the verdict's quality assessment on, off, or both (default: both, "
                                 "comparing safety accuracy).")

    def handle(self, *args, variants=None, targets=None, offline_only=False, gate=False, quality="both", **options):
        modes = {"on": [True], "off": [False], "both": [False, True]}[quality]
        if offline_only:
            if targets and set(targets) != {eval_suite.OFFLINE_TARGET}:
                raise CommandError("--offline-only runs only the offline-rules target; drop --target.")
            targets = [eval_suite.OFFLINE_TARGET]
        try:
            matrix = eval_matrix.matrix_create(variants=variants, targets=targets, quality_modes=modes)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        cells = matrix.cells.count()
        self.stdout.write(f"Validator eval matrix #{matrix.pk}: {matrix.case_count} cases × {cells} cells "
                          f"= {matrix.case_count * cells} runs")

        def show(cell):
            self.stdout.write(f"\r{cell.target.name}:{_v(cell)}:{_q(cell).replace(' ', '-')} "
                              + progress_bar(cell.completed, cell.total, cell.correct), ending="")
            self.stdout.flush()

        matrix = eval_matrix.matrix_run_here(matrix, progress=show)
        self.stdout.write("")
        t = eval_suite.THRESHOLDS
        self.stdout.write(f"Thresholds: dangerous ≤ {t.dangerous_max_wrong_approvals} wrong approvals; general "
                          f"accuracy ≥ {t.general_min_accuracy:.0%}, wrong approvals ≤ {t.general_max_wrong_approval_rate:.0%}")
        failed = []
        rows = list(matrix.cells.select_related("target").order_by("pk"))
        for cell in rows:
            self.stdout.write(cell_line(cell))
            for failure in cell.gate_failures:
                self.stdout.write(f"    - {failure}")
            for result in cell.results:
                if not result["correct"]:
                    self.stdout.write(f"    ✗ {result['case']} ({result['category']}): expected {result['expected']}, "
                                      f"got {result['got']}")
            if cell.status == EvalCell.Status.DONE and not cell.gate_passed or cell.status == EvalCell.Status.FAILED:
                failed.append(cell.name)
        ran = eval_matrix.coverage(rows)
        self.stdout.write(f"Cells that ran: {ran['ran']} of {ran['total']}"
                          + (f": {', '.join(ran['ran_names'])}" if ran["ran_names"] else ""))
        if any(not c.reads_prompt for c in rows):
            self.stdout.write("  (the offline rules read no prompt: their one cell stands for every prompt variant)")
        if ran["skipped_names"]:
            self.stdout.write(f"Skipped (not measured): {', '.join(ran['skipped_names'])}")
            if not offline_only:
                failed += [f"{name} skipped" for name in ran["skipped_names"]]
        comparisons = eval_matrix.quality_comparisons(rows)
        if comparisons:
            self.stdout.write("Safety with the quality assessment off vs on (it must not drop):")
        for comparison in comparisons:
            mark = "DROPPED" if comparison["dropped"] else "holds"
            self.stdout.write(f"  {comparison['on'].target.name}:{_v(comparison['on'])}: {comparison['line']} ({mark})")
        if not failed and ran["ran"]:
            self.stdout.write(self.style.SUCCESS(f"Gate: PASS on {ran['ran']} of {ran['total']} cells"))
        elif gate:
            raise CommandError(f"Gate: FAIL ({', '.join(failed) or 'no cell was judged'})")
        else:
            self.stdout.write(self.style.WARNING(f"Gate: FAIL ({', '.join(failed) or 'no cell was judged'})"))
