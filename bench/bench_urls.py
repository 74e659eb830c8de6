"""The product's URLs plus a trivial signed-in view: the baseline page ratios are measured against."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import include, path


@login_required
def trivial(request):
    return HttpResponse("ok")


urlpatterns = [
    path("bench/trivial/", trivial),
    path("", include("lindy.urls")),
]
