from django.urls import path

from . import views

# Mounted under /validator/ beside the review of blocked actions, where users have always found it.
urlpatterns = [
    path("outbox/", views.outbox, name="outbox"),
    path("outbox/<int:entry_id>/resend/", views.outbox_resend, name="outbox-resend"),
]
