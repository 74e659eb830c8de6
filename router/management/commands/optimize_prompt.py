"""manage.py optimize_prompt ROUTE --target T --budget-usd N: evolve a route's prompt against its eval
set (gepa) within a budget stated before it starts; the Pareto-best candidates become prompt variants."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from router import gateway, services
from router.models import Route, Target
from router.services import optimize


class Command(BaseCommand):
    help = ("Optimize a route's prompt against its eval set within a budget (calls, tokens, dollars). By default "
            "the run is queued as a Celery job (it survives a worker restart); --inline runs it here.")

    def add_arguments(self, parser):
        parser.add_argument("route", help="Route name, e.g. validator")
        parser.add_argument("--target", required=True, help="The target the candidates are evaluated on")
        parser.add_argument("--budget-usd", required=True, help="Dollars the run may spend, at most")
        parser.add_argument("--budget-calls", type=int, default=optimize.DEFAULT_CALLS, help="Model calls, at most")
        parser.add_argument("--budget-tokens", type=int, default=optimize.DEFAULT_TOKENS, help="Tokens, at most")
        parser.add_argument("--variant", default=None, help="The parent variant (default: the route's baseline's)")
        parser.add_argument("--inline", action="store_true", help="Run in this process instead of on a worker")

    def handle(self, *args, route, target, budget_usd, budget_calls, budget_tokens, variant, inline, **options):
        route_obj = Route.objects.filter(name=route).first()
        if route_obj is None:
            raise CommandError(f"No route {route!r}. Optimizable: {', '.join(optimize.optimizable_routes()) or 'none'}.")
        target_obj = Target.objects.filter(name=target).first()
        if target_obj is None:
            raise CommandError(f"No target {target!r}. Known: {', '.join(Target.objects.values_list('name', flat=True))}")
        kwargs = dict(route=route_obj, target=target_obj, budget_usd=budget_usd, budget_calls=budget_calls,
                      budget_tokens=budget_tokens, parent_variant=variant)
        try:
            with transaction.atomic():
                run = (services.optimization_run_create if inline else services.optimization_run_start)(**kwargs)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"Optimization #{run.pk}: {route} on {target}, parent variant {run.parent_variant!r}, "
                          f"{run.case_count} eval cases: {len(run.split['train'])} train gepa, {len(run.split['val'])} "
                          f"choose its candidates, {len(run.split['holdout'])} are held out for the rollout gate.")
        self.stdout.write(f"Budget: ${run.budget_usd.normalize()}, {run.budget_calls} calls, {run.budget_tokens} tokens "
                          "(the run stops before a call would exceed any of them).")
        if gateway.offline_mode():
            self.stdout.write("Offline provider: candidates come from the offline rules' deterministic mutations.")
        if not inline:
            self.stdout.write(f"Queued on Celery. Follow it on the route's page (Models -> {route}).")
            return
        run = services.optimization_run_execute(run_id=run.pk)
        self.stdout.write(f"{run.get_status_display()}: {run.stop_reason or run.error}")
        self.stdout.write(f"Generations {run.generation}; spent {run.spent_calls} calls, {run.spent_tokens} tokens, "
                          f"${run.spent_usd.normalize()}; parent score {run.parent_score}, best {run.best_score}.")
        for candidate in run.candidates.order_by("-eval_score", "name"):
            held = ("" if candidate.holdout_score is None or candidate.parent_holdout_score is None else
                    f"; held out {candidate.holdout_score:.3f} (parent {candidate.parent_holdout_score:.3f})")
            self.stdout.write(f"  {candidate.name}: {candidate.eval_score:.3f} on gepa's validation cases "
                              f"(parent {candidate.parent_score:.3f}){held}")
        if run.status != run.Status.DONE:
            raise CommandError(f"Optimization #{run.pk} failed: {run.error}")
