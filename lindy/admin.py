from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

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
