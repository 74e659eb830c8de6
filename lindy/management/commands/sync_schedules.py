from django.core.management.base import BaseCommand

from lindy import schedules


class Command(BaseCommand):
    help = "Create the beat entries the product needs (idempotent; hand edits are kept)."

    def handle(self, *args, **options):
        created = schedules.sync()
        for name in created:
            self.stdout.write(f"created {name}")
        self.stdout.write(self.style.SUCCESS(f"{len(schedules.registered())} beat entries in place."))
