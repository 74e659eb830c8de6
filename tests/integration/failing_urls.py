"""A URL that fails, for the 500 page's test; the project's handler500."""

from django.urls import path

from lindy.urls import handler500  # noqa: F401
from lindy.urls import urlpatterns as project_patterns


def boom(request):
    raise RuntimeError("boom")


urlpatterns = [path("boom/", boom), *project_patterns]
