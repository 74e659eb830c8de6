from django.contrib import admin

from .models import Item, Run, Schedule, SourceState


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("pk", "filesystem", "status", "trigger", "item_count", "fact_count", "revision", "attempts",
                    "lease_holder", "heartbeat_at", "created_at")
    list_filter = ("status", "trigger")
    raw_id_fields = ("filesystem", "revision", "triggered_by")


@admin.register(SourceState)
class SourceStateAdmin(admin.ModelAdmin):
    list_display = ("filesystem", "source", "enabled", "status", "last_success_at", "last_error_at")
    list_filter = ("source", "status", "enabled")
    raw_id_fields = ("filesystem",)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = ("filesystem", "next_run_at")
    raw_id_fields = ("filesystem",)


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("pk", "filesystem", "source", "external_id", "occurred_at", "processed_by", "processed_note",
                    "left_out")
    list_filter = ("source",)
    raw_id_fields = ("filesystem", "fetched_by", "processed_by")
