from django.contrib import admin

from .models import ModelCall, Route, Target


@admin.register(Target)
class TargetAdmin(admin.ModelAdmin):
    list_display = ["name", "provider", "model", "quantization", "input_price", "output_price"]
    list_filter = ["provider"]
    search_fields = ["name", "model"]


@admin.register(Route)
class RouteAdmin(admin.ModelAdmin):
    list_display = ["name", "baseline", "max_tokens", "updated_at"]
    list_select_related = ["baseline"]


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    list_display = ["created_at", "route", "provider", "model", "user", "input_tokens", "output_tokens", "cost", "latency_ms", "error"]
    list_filter = ["route", "provider"]
    list_select_related = ["user"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in ModelCall._meta.fields]
