from django.contrib import admin

from .models import (
    CallScore,
    EvalRun,
    ModelCall,
    ModelChoice,
    PromptVariant,
    Provider,
    Rollout,
    RolloutEvent,
    Route,
    Target,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never written here: the Models pages change these through router.services, which
    record every change in the audit log, lindy.AuditEntry (who, when, before, after)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Provider)
class ProviderAdmin(ReadOnlyAdmin):
    list_display = ["name", "kind", "base_url", "api_key_env"]


@admin.register(Target)
class TargetAdmin(ReadOnlyAdmin):
    list_display = ["name", "provider", "host", "model", "quantization", "input_price", "output_price", "user_selectable",
                    "accepts_images"]
    list_filter = ["provider", "host"]
    search_fields = ["name", "model"]


@admin.register(Route)
class RouteAdmin(ReadOnlyAdmin):
    list_display = ["name", "baseline", "baseline_variant", "max_tokens", "updated_at"]
    list_select_related = ["baseline"]


@admin.register(PromptVariant)
class PromptVariantAdmin(ReadOnlyAdmin):
    list_display = ["route", "name", "description"]
    list_select_related = ["route"]


class RolloutEventInline(admin.TabularInline):
    model = RolloutEvent
    extra = 0
    readonly_fields = ("kind", "from_percent", "to_percent", "reason", "actor", "created_at")
    fields = readonly_fields
    can_delete = False


@admin.register(Rollout)
class RolloutAdmin(admin.ModelAdmin):
    """Read-only here: state changes go through the rollout page so each one records its reason."""

    list_display = ["route", "candidate", "candidate_variant", "status", "percent", "created_at"]
    list_filter = ["status"]
    list_select_related = ["route", "candidate"]
    inlines = [RolloutEventInline]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        # Deleting would move its users off the candidate with no event, and erase the history.
        return False


@admin.register(ModelChoice)
class ModelChoiceAdmin(admin.ModelAdmin):
    list_display = ["user", "route", "target", "updated_at"]
    list_select_related = ["user", "target"]


class EvidenceAdmin(ReadOnlyAdmin):
    """Evidence the rollouts and guardrails decide on (eval runs, online scores, model calls): only
    the product writes it, so nobody can hand a prompt the eval or the scores it did not earn."""


@admin.register(EvalRun)
class EvalRunAdmin(EvidenceAdmin):
    list_display = ["route", "target", "variant", "status", "passed", "total", "score", "created_at"]
    list_select_related = ["route", "target"]


@admin.register(CallScore)
class CallScoreAdmin(EvidenceAdmin):
    list_display = ["call", "metric", "value", "source", "created_at"]
    list_filter = ["metric"]
    raw_id_fields = ["call"]


@admin.register(ModelCall)
class ModelCallAdmin(EvidenceAdmin):
    list_display = ["created_at", "route", "provider", "model", "arm", "prompt_variant", "user", "input_tokens",
                    "output_tokens", "cost", "latency_ms", "error"]
    list_filter = ["route", "provider", "arm"]
    list_select_related = ["user"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in ModelCall._meta.fields]
