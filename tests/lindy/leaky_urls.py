"""The product's URLs plus one page that leaks a private task's title to anyone signed in: the
canary crawl's own test (tests/lindy/test_canary_crawl.py) must catch it."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path

from lindy.models import AgentTask
from lindy.urls import urlpatterns as product


@login_required
def leak(request, task_id: int):
    return HttpResponse(f"<p>{AgentTask.objects.get(pk=task_id).title}</p>")


urlpatterns = [*product, path("leak/<int:task_id>/", leak)]
