"""The product's URLs plus a trivial signed-in view: the baseline page ratios are measured against.

Trivial means the page every view shares and nothing else: the signed-in layout (navigation
included) with an empty body."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import include, path


@login_required
def trivial(request):
    return render(request, "base.html", {})


urlpatterns = [
    path("bench/trivial/", trivial),
    path("", include("lindy.urls")),
]
