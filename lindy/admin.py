from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.template.response import TemplateResponse

from . import services
from .models import AgentTask, ApiToken, Meeting, Membership, TaskEvent, Team, User


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "name", "is_internal", "is_support", "is_staff", "is_superuser", "is_active"]
    list_filter = ["is_internal", "is_support", "is_staff", "is_superuser", "is_active"]
    search_fields = ["email", "name"]
    fieldsets = [
        (None, {"fields": ["email", "password", "name"]}),
        ("Roles", {"fields": ["is_internal", "is_support", "is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]
    filter_horizontal = ["groups", "user_permissions"]
    actions = ["delete_with_data"]

    @admin.action(description="Delete selected users and all their data (shows what is removed)",
                  permissions=["delete"])
    def delete_with_data(self, request, queryset):
        """First a page listing, per user, what would be removed (counted by deleting inside a
        rolled-back transaction); on confirmation the deletion, and a message with the counts."""
        users = list(queryset.order_by("email"))
        if request.user in users:
            self.message_user(request, "You cannot delete your own account here.", messages.ERROR)
            return None
        if request.POST.get("confirm") == "yes":
            for user in users:
                removed = services.user_delete(user=user)
                self.message_user(request, removed.summary(), messages.SUCCESS)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Delete users and all their data",
            "opts": self.model._meta,
            "previews": [services.user_delete(user=user, dry_run=True) for user in users],
            "users": users,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/lindy/user/delete_with_data.html", context)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["role", "team"]
    list_select_related = ["user", "team"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    list_select_related = ["user"]


class TaskEventInline(admin.TabularInline):
    model = TaskEvent
    extra = 0


@admin.register(AgentTask)
class AgentTaskAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "team", "visibility", "updated_at"]
    list_filter = ["visibility", "team"]
    search_fields = ["title"]
    list_select_related = ["owner", "team"]
    inlines = [TaskEventInline]


@admin.register(TaskEvent)
class TaskEventAdmin(admin.ModelAdmin):
    list_display = ["task", "seq", "actor", "name", "tool_name", "created_at"]
    list_filter = ["actor"]
    list_select_related = ["task"]


@admin.register(Meeting)
class MeetingAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "team", "occurred_at", "public"]
    list_filter = ["public", "team"]
    search_fields = ["title", "notes"]
    filter_horizontal = ["shared_with"]
    list_select_related = ["owner", "team"]
