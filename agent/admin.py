from django.contrib import admin

from .models import OpenTask, OutboxEntry


@admin.register(OutboxEntry)
class OutboxEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tool", "adapter", "status", "user", "team")
    list_filter = ("adapter", "status", "tool")
    raw_id_fields = ("task", "user", "team", "decision")
    readonly_fields = [f.name for f in OutboxEntry._meta.fields]


@admin.register(OpenTask)
class OpenTaskAdmin(admin.ModelAdmin):
    list_display = ("user", "channel", "conversation_ref", "task", "last_inbound_at")
    raw_id_fields = ("user", "task")
