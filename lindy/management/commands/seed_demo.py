from django.core.management.base import BaseCommand, CommandError

from lindy import demo


class Command(BaseCommand):
    help = "Create the demo teams, people, tasks and meetings (idempotent). Exits non-zero, naming the step, when any part fails."

    def handle(self, *args, **options):
        try:
            demo.seed()
        except demo.DemoFailed as exc:
            raise CommandError(f"The demo could not be made; nothing was kept. Step {exc.step} failed: {exc.problem}") from exc
        self.stdout.write(self.style.SUCCESS(f"Demo data ready. Logins (password: {demo.PASSWORD}):"))
        for email, role in demo.LOGINS:
            self.stdout.write(f"  {email:<22} {role}")
