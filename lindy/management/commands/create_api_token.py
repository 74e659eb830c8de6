from django.core.management.base import BaseCommand, CommandError

from lindy import services
from lindy.models import User


class Command(BaseCommand):
    help = "Print a new API bearer token for the user with this email. It is shown once."

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("--name", default="", help="A label to tell tokens apart.")

    def handle(self, *args, email, name, **options):
        user = User.objects.filter(email__iexact=email).first()
        if user is None:
            raise CommandError(f"No user with email {email!r}.")
        _, key = services.api_token_create(user=user, name=name)
        self.stdout.write(key)
