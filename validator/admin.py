from django.contrib import admin

from .models import Conversation, Decision, OutboxEntry


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tool", "effect", "status", "approved", "validator_failure", "user", "team")
    list_filter = ("status", "effect", "validator_failure", "tool")
    search_fields = ("user__email", "tool")
    raw_id_fields = ("task", "user", "team", "resolved_by")
    # Decisions are a record: the admin reads them; resolving happens on the user's page.
    readonly_fields = [f.name for f in Decision._meta.fields]


@admin.register(OutboxEntry)
class OutboxEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tool", "adapter", "status", "user", "team")
    list_filter = ("adapter", "status", "tool")
    raw_id_fields = ("task", "user", "team", "decision")
    readonly_fields = [f.name for f in OutboxEntry._meta.fields]


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("user", "channel", "conversation_ref", "task", "last_inbound_at")
    raw_id_fields = ("user", "task")
