import os

from celery import Celery

from lindy.env import exit_on_bad_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lindy.settings")
exit_on_bad_settings()

app = Celery("lindy")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
