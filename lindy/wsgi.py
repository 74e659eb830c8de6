import os

from django.core.wsgi import get_wsgi_application

from lindy.env import exit_on_bad_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lindy.settings")
exit_on_bad_settings()
application = get_wsgi_application()
