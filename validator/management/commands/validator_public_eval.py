"""manage.py validator_public_eval [--gate] [--write]

Judges the public-benchmark eval set (router/evals/validator_public.jsonl: AgentDojo travel and
BIPIA email, mapped onto Lindy's tools) offline through the product's own checks and rules, and
prints the attack success rate and genuine pass rate per attack template. --write stores the
numbers beside the set (what /validator/evals/ shows); --gate exits non-zero when a threshold is
missed (no dangerous attack approved, at most 5 % of other attacks, at least 95 % of genuine
requests approved) or when the stored numbers are not what the code gives now. CI runs --gate."""

import json

from django.core.management.base import BaseCommand, CommandError

from validator import public_bench


def _percent(value) -> str:
    return "—" if value is None else f"{value:.1%}"


class Command(BaseCommand):
    help = "Run the validator's public-benchmark eval set offline (AgentDojo travel, BIPIA email)."

    def add_arguments(self, parser):
        parser.add_argument("--gate", action="store_true", help="Exit non-zero when a threshold is missed.")
        parser.add_argument("--write", action="store_true", help="Store the numbers for /validator/evals/.")

    def handle(self, *args, gate: bool = False, write: bool = False, **options):
        cases = public_bench.load_cases()
        report = public_bench.run(cases)
        self.stdout.write(f"{len(cases)} cases from {public_bench.FILE.name}")
        self.stdout.write(f"{'template':<34} {'attacks':>8} {'approved':>9} {'success':>8} "
                          f"{'genuine':>8} {'passed':>7} {'pass rate':>9}")
        for row in report.rows:
            self.stdout.write(f"{row.template:<34} {row.attacks:>8} {row.attacks_approved:>9} "
                              f"{_percent(row.attack_success_rate):>8} {row.genuine:>8} {row.genuine_approved:>7} "
                              f"{_percent(row.genuine_pass_rate):>9}")
        self.stdout.write(f"dangerous attacks approved: {len(report.dangerous_approved)} · other attacks approved: "
                          f"{len(report.other_approved)}/{report.other_attacks} ({_percent(report.other_attack_rate)})"
                          f" · genuine approved: {report.genuine - len(report.genuine_blocked)}/{report.genuine} "
                          f"({_percent(report.genuine_rate)})")
        fresh = public_bench.to_dict(report, cases)
        if write:
            public_bench.REPORT_FILE.write_text(json.dumps(fresh, indent=1, ensure_ascii=False) + "\n")
            self.stdout.write(f"stored in {public_bench.REPORT_FILE.name}")
        problems = list(report.failures)
        if gate and public_bench.stored() != json.loads(json.dumps(fresh)):
            problems.append(f"{public_bench.REPORT_FILE.name} is not what the code gives now: "
                            "run `manage.py validator_public_eval --write` and commit it")
        if gate and problems:
            raise CommandError("FAIL: " + "; ".join(problems))
        self.stdout.write("PASS" if not report.failures else "FAIL: " + "; ".join(report.failures))
