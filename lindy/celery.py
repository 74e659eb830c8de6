import logging.config
import os

from celery import Celery
from celery.signals import setup_logging
from django_structlog.celery.steps import DjangoStructLogInitStep

from lindy.env import exit_on_bad_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lindy.settings")
exit_on_bad_settings()

app = Celery("lindy")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Workers log through Django's LOGGING (JSON lines) and pick up the request id the task was queued with.
app.steps["worker"].add(DjangoStructLogInitStep)


@setup_logging.connect
def _django_logging(**kwargs) -> None:
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
