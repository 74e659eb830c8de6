"""The Django admin's changes to audited objects (memberships, opt-outs, channels...) go into the one
audit log too: a ModelAdmin mixin that records each save and deletion with its fields before and
after, and the admin user as actor."""

from __future__ import annotations

from django.db import transaction

from . import audit


class AuditedAdmin:
    """Mix into a ModelAdmin. `audit_fields`: the fields recorded (None: all); `audit_team(obj)`:
    the team whose admins read the entry (None: superusers only)."""

    audit_fields: tuple[str, ...] | None = None

    def audit_team(self, obj):
        return getattr(obj, "team_id", None)

    def audit_snapshot(self, obj):
        return audit.snapshot(obj, self.audit_fields)

    def _action(self, obj, verb: str) -> str:
        return f"{audit.object_type_of(obj)}.{verb}"

    def save_model(self, request, obj, form, change):
        before = None
        if change and obj.pk:
            stored = type(obj)._default_manager.filter(pk=obj.pk).first()
            before = self.audit_snapshot(stored) if stored else None
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            after = self.audit_snapshot(obj)
            if before != after:
                audit.record(actor=request.user, action=self._action(obj, "changed" if change else "added"), obj=obj,
                             team=self.audit_team(obj), before=before, after=after)

    def delete_model(self, request, obj):
        with transaction.atomic():
            audit.record(actor=request.user, action=self._action(obj, "removed"), obj=obj, team=self.audit_team(obj),
                         before=self.audit_snapshot(obj), after=None)
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset:
                audit.record(actor=request.user, action=self._action(obj, "removed"), obj=obj,
                             team=self.audit_team(obj), before=self.audit_snapshot(obj), after=None)
            super().delete_queryset(request, queryset)


def record_formset(request, formset, snapshot=audit.snapshot) -> list:
    """Save an inline formset (e.g. a team's memberships edited on the team's page) with one audit
    entry per added, changed or removed row; returns what `formset.save()` returns."""
    manager = formset.model._default_manager
    befores = {form.instance.pk: snapshot(manager.get(pk=form.instance.pk))
               for form in formset.initial_forms if form.instance.pk}
    with transaction.atomic():
        for form in formset.deleted_forms:
            obj = form.instance
            if obj.pk in befores:
                audit.record(actor=request.user, action=f"{audit.object_type_of(obj)}.removed", obj=obj,
                             team=getattr(obj, "team_id", None), before=befores[obj.pk], after=None)
        instances = formset.save()
        for obj in instances:
            before, after = befores.get(obj.pk), snapshot(obj)
            if before != after:
                verb = "changed" if before else "added"
                audit.record(actor=request.user, action=f"{audit.object_type_of(obj)}.{verb}", obj=obj,
                             team=getattr(obj, "team_id", None), before=before, after=after)
    return instances
