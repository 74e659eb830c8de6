from django.contrib import admin

from .models import Decision


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tool", "effect", "status", "approved", "validator_failure", "user", "team")
    list_filter = ("status", "effect", "validator_failure", "tool")
    search_fields = ("user__email", "tool")
    raw_id_fields = ("task", "user", "team", "resolved_by")
    # Decisions are a record: the admin reads them; resolving happens on the user's page.
    readonly_fields = [f.name for f in Decision._meta.fields]
