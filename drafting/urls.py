from django.urls import path

from . import views

urlpatterns = [
    path("", views.draft_list, name="drafting-list"),
    path("charts/", views.charts, name="drafting-charts"),
    path("<int:draft_id>/", views.draft_detail, name="drafting-detail"),
]
