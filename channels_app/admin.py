from django.contrib import admin

from lindy.admin_audit import AuditedAdmin

from .models import (
    InboundBundle,
    NumberDay,
    OptOut,
    OutboundMessage,
    RatioAlert,
    SendingNumber,
    SlackChannel,
    SlackChannelShare,
    SlackInstallation,
    TextingProfile,
)


@admin.register(SendingNumber)
class SendingNumberAdmin(admin.ModelAdmin):
    list_display = ["phone", "label", "kind", "daily_cap", "active"]
    list_filter = ["kind", "active"]


@admin.register(NumberDay)
class NumberDayAdmin(admin.ModelAdmin):
    list_display = ["number", "day", "sent", "received", "fallbacks", "capped"]
    list_filter = ["number"]
    date_hierarchy = "day"


@admin.register(RatioAlert)
class RatioAlertAdmin(admin.ModelAdmin):
    list_display = ["number", "day", "level", "ratio", "created_at", "acknowledged_at"]
    list_filter = ["level"]


@admin.register(TextingProfile)
class TextingProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "phone", "number", "first_texted_at", "imessage_capable"]
    raw_id_fields = ["user"]


@admin.register(OutboundMessage)
class OutboundMessageAdmin(admin.ModelAdmin):
    list_display = ["user", "channel", "status", "fallback_reason", "number", "created_at"]
    list_filter = ["status", "channel", "fallback_reason"]
    exclude = ["body"]


@admin.register(InboundBundle)
class InboundBundleAdmin(admin.ModelAdmin):
    list_display = ["conversation", "status", "heartbeat_at", "dispatched_at", "attempts"]
    list_filter = ["status"]


@admin.register(SlackInstallation)
class SlackInstallationAdmin(admin.ModelAdmin):
    list_display = ["slack_team_name", "slack_team_id", "team", "installed_at"]
    exclude = ["bot_token", "bot_refresh_token", "user_token"]


class ShareInline(admin.TabularInline):
    model = SlackChannelShare
    extra = 0
    raw_id_fields = ["user"]


@admin.register(SlackChannel)
class SlackChannelAdmin(AuditedAdmin, admin.ModelAdmin):
    list_display = ["name", "channel_id", "team", "is_private", "active", "use_for_team_memory"]
    list_filter = ["is_private", "active", "team"]
    inlines = [ShareInline]


@admin.register(OptOut)
class OptOutAdmin(AuditedAdmin, admin.ModelAdmin):
    """Staff changing an opt-out changes whom the assistant may text: in the audit log."""

    audit_fields = ("phone", "channel", "keyword", "opted_out_at", "opted_in_at", "profile")

    def audit_team(self, obj):
        return None

    list_display = ["phone", "channel", "keyword", "opted_out_at", "opted_in_at", "profile"]
    list_filter = ["channel"]
    raw_id_fields = ["profile"]
