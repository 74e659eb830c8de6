"""manage.py run_offline_eval ROUTE TARGET [--variant NAME]: run a route's eval set against a target."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from router import services
from router.models import Route, Target
from router.services.evals import progress_bar


class Command(BaseCommand):
    help = "Run a route's offline eval set (router/evals/<route>.jsonl) against a target, with a progress bar."

    def add_arguments(self, parser):
        parser.add_argument("route", help="Route name, e.g. validator")
        parser.add_argument("target", help="Target name, e.g. deepseek-v4-flash-atlas")
        parser.add_argument("--variant", default="default", help="Prompt variant (default: default)")

    def handle(self, *args, route, target, variant, **options):
        try:
            route_obj = Route.objects.get(name=route)
        except Route.DoesNotExist:
            raise CommandError(f"No route {route!r}.") from None
        try:
            target_obj = Target.objects.get(name=target)
        except Target.DoesNotExist:
            raise CommandError(f"No target {target!r}. Known: {', '.join(Target.objects.values_list('name', flat=True))}") from None
        try:
            run = services.eval_run_create(route=route_obj, target=target_obj, variant=variant)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"Eval run #{run.pk}: {route} on {target} with variant {variant!r}, {run.total} cases")

        def show(current):
            self.stdout.write("\r" + progress_bar(current.completed, current.total, current.passed), ending="")
            self.stdout.flush()

        run = services.eval_run_execute(run_id=run.pk, progress=show)
        self.stdout.write("")
        if run.status != run.Status.DONE:
            raise CommandError(f"Eval run #{run.pk} failed: {run.error}")
        for result in run.results.all():
            mark = "PASS" if result.passed else "FAIL"
            self.stdout.write(f"  {mark} {result.case_id}: {result.detail}")
        self.stdout.write(self.style.SUCCESS(
            f"Score {run.score:.1%}: {run.passed}/{run.total} passed, {run.errors} errors, "
            f"cost ${run.cost} (provider {run.provider_used or 'none'})"
        ))
