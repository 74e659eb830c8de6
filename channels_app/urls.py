from django.urls import path

from . import views

urlpatterns = [
    path("", views.channel_list, name="channels"),
    path("slack/<int:channel_id>/team-memory/", views.team_memory_toggle, name="channels-team-memory"),
    path("slack/shares/<int:share_id>/memory/", views.private_memory_toggle, name="channels-private-memory"),
    path("texting/", views.texting, name="channels-texting"),
    path("texting/lindy.vcf", views.texting_vcard, name="channels-vcard"),
    path("health/", views.channel_health, name="channel-health"),
    path("health/opt-outs/", views.opt_outs, name="channel-opt-outs"),
    path("health/alerts/<int:alert_id>/acknowledge/", views.alert_acknowledge, name="channel-alert-acknowledge"),
    path("imessage/webhook", views.imessage_webhook, name="channels-imessage-webhook"),
    path("sms/webhook", views.sms_webhook, name="channels-sms-webhook"),
]
