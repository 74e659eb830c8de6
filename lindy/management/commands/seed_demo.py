from django.core.management.base import BaseCommand

from lindy import demo


class Command(BaseCommand):
    help = "Create the demo teams, people, tasks and meetings (idempotent)."

    def handle(self, *args, **options):
        demo.seed()
        self.stdout.write(self.style.SUCCESS(f"Demo data ready. Logins (password: {demo.PASSWORD}):"))
        for email, role in demo.LOGINS:
            self.stdout.write(f"  {email:<22} {role}")
