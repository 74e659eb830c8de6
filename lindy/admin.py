from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse

from . import audit, services
from .admin_audit import AuditedAdmin, record_formset
from .models import AgentTask, ApiToken, AuditEntry, Meeting, Membership, TaskEvent, Team, User


def membership_snapshot(membership: Membership) -> dict:
    """A membership as the audit log shows it: who, where, which role."""
    return {"user": membership.user.email, "team": membership.team.name, "role": membership.role}


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
    # Django's bulk delete is replaced by delete_with_data: it shows the counts first, erases each
    # user's data through the apps' erasers and writes an audit entry per user.
    actions = ["delete_with_data"]
    # Rank: only a superuser grants or edits what makes a superuser or staff account.
    RANK_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions")
    # What the audit log records of a user: what they may do.
    AUDITED_FIELDS = ("email", "is_internal", "is_support", "is_active", "is_staff", "is_superuser")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += [f for f in self.RANK_FIELDS if f not in fields]
        return fields

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        if change and obj.pk:
            stored = User.objects.get(pk=obj.pk)
            if stored.is_superuser and (not obj.is_superuser or not obj.is_active):
                refusal = services.superuser_rank_refusal(actor=request.user, demoting=[stored])
                if refusal:
                    raise ValidationError(refusal)
            before = audit.snapshot(stored, self.AUDITED_FIELDS)
        else:
            before = None
        super().save_model(request, obj, form, change)
        after = audit.snapshot(obj, self.AUDITED_FIELDS)
        if before != after:
            audit.record(actor=request.user, action="user.roles_changed" if change else "user.added", obj=obj,
                         before=before, after=after)

    def save_related(self, request, form, formsets, change):
        # Groups and permissions are many-to-many: saved after the user, audited when they differ.
        before = self._grants(form.instance) if change else None
        super().save_related(request, form, formsets, change)
        after = self._grants(form.instance)
        if change and before != after:
            audit.record(actor=request.user, action="user.roles_changed", obj=form.instance, before=before,
                         after=after)

    @staticmethod
    def _grants(user) -> dict:
        return {"groups": sorted(user.groups.values_list("name", flat=True)),
                "user_permissions": sorted(user.user_permissions.values_list("codename", flat=True))}

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def delete_view(self, request, object_id, extra_context=None):
        target = self.get_object(request, object_id)
        refusal = target and services.superuser_rank_refusal(actor=request.user, removing=[target])
        if refusal:
            self.message_user(request, refusal, messages.ERROR)
            return HttpResponseRedirect("../change/" if self.has_view_permission(request, target) else "../../")
        return super().delete_view(request, object_id, extra_context)

    @admin.action(description="Delete selected users and all their data (shows what is removed)",
                  permissions=["delete"])
    def delete_with_data(self, request, queryset):
        """First a page listing, per user, what would be removed (counted by deleting inside a
        rolled-back transaction); on confirmation the deletion, and a message with the counts."""
        users = list(queryset.order_by("email"))
        if request.user in users:
            self.message_user(request, "You cannot delete your own account here.", messages.ERROR)
            return None
        refusal = services.superuser_rank_refusal(actor=request.user, removing=users)
        if refusal:
            self.message_user(request, refusal, messages.ERROR)
            return None
        if request.POST.get("confirm") == "yes":
            user_type = ContentType.objects.get_for_model(User)
            for user in users:
                pk, label = user.pk, str(user)
                removed = services.user_delete(user=user, actor=request.user)
                # The admin's own audit log (Recent actions, LogEntry), with what went.
                LogEntry.objects.create(user_id=request.user.pk, content_type=user_type, object_id=str(pk),
                                        object_repr=label[:200], action_flag=DELETION,
                                        change_message=removed.summary())
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

    def save_formset(self, request, form, formset, change):
        if formset.model is Membership:
            record_formset(request, formset, snapshot=membership_snapshot)
        else:
            super().save_formset(request, form, formset, change)


@admin.register(Membership)
class MembershipAdmin(AuditedAdmin, admin.ModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["role", "team"]
    list_select_related = ["user", "team"]

    def audit_snapshot(self, obj):
        return membership_snapshot(obj)


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The audit log, read-only: entries are written by lindy.audit.record, never edited."""

    list_display = ["created_at", "actor", "team", "action", "object_type", "object_id", "object_repr"]
    list_filter = ["action", "object_type", "team"]
    list_select_related = ["actor", "team"]
    date_hierarchy = "created_at"
    readonly_fields = ("created_at", "actor", "actor_label", "team", "action", "object_type", "object_id",
                       "object_repr", "before", "after")
    fields = readonly_fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


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
