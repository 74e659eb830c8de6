from django.urls import path

from . import views

app_name = "analyst"
urlpatterns = [
    path("", views.page, name="page"),
]
