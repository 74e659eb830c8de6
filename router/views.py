"""Models pages: routes, rollouts, targets, offline evals, cost, and the user's own model choice."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from . import gateway, limits, permissions, routing, selectors, services
from .forms import (
    BaselineForm,
    BudgetForm,
    ChoiceForm,
    ConcurrencyForm,
    EvalRunForm,
    OptimizationForm,
    ProviderEditForm,
    ProviderForm,
    RolloutForm,
    StagesForm,
    TargetForm,
    VariantForm,
)
from .models import EvalRun, ModelChoice, OptimizationRun, PromptVariant, Provider, Rollout, Route, Target
from .services import evals as eval_service
from .services import evidence, scores
from .services import optimize as optimize_service
from .services.config import CONFLICT
from .services.evidence import MISSING_EVIDENCE, UNEVALUATED_CANDIDATE, MissingEvidence
from .services.rollouts import stages_text

PAGE_SIZE = 25
COST_DAYS = (7, 14, 30)


def _usage_viewer(request):
    if not permissions.can_view_team_usage(request.user):
        raise Http404("No such page.")


def _manager(request):
    if not permissions.can_manage_models(request.user):
        raise Http404("No such page.")


@login_required
def routes(request):
    if not permissions.can_manage_models(request.user) and permissions.can_view_team_usage(request.user):
        return redirect("router:costs")  # team admins see their own team's model use, not the product's routing
    _manager(request)
    return render(request, "router/routes.html", {
        "routes": selectors.routes_overview(), "can_manage": permissions.can_manage_models(request.user),
    })


@login_required
def route_detail(request, name: str):
    _manager(request)
    route = get_object_or_404(Route.objects.select_related("baseline"), name=name)
    return render(request, "router/route_detail.html", _route_context(route))


def _route_context(route, **forms):
    variants = list(PromptVariant.objects.filter(route=route))
    # The four menus share what the page already loaded: one query each, not one per menu.
    menus = {"route": route, "variants": [v.name for v in variants], "targets": list(Target.objects.all())}
    active = Rollout.objects.filter(route=route, status__in=Rollout.ACTIVE).first()
    return {
        "route": route, "variants": variants, "active": active,
        "rollouts": Rollout.objects.filter(route=route).select_related("candidate")[:20],
        "matrix": [{**row, "passes": evidence.run_passed(row["run"])} for row in selectors.eval_matrix(route)],
        "thresholds": evidence.thresholds(),
        "has_eval_set": eval_service.has_eval_set(route.name),
        "evidence_only": routing.registered_routes().get(route.name) is not None
        and routing.registered_routes()[route.name].evidence_only,
        "eval_variants": _eval_variants(route.name),
        "baseline_form": forms.get("baseline_form") or BaselineForm(
            **menus, initial={"baseline": route.baseline_id, "baseline_variant": route.baseline_variant}),
        "variant_form": forms.get("variant_form") or VariantForm(),
        "eval_form": forms.get("eval_form") or EvalRunForm(**menus),
        "rollout_form": forms.get("rollout_form") or RolloutForm(**menus),
        "audit_events": selectors.route_audit_events(route, variants),
        "optimizable": optimize_service.optimizable(route.name),
        "optimization_form": forms.get("optimization_form") or OptimizationForm(**menus),
        "optimizations": OptimizationRun.objects.filter(route=route).select_related("target").defer("state")[:10],
        "offline": gateway.offline_mode(),
        "evals_to_run": forms.get("evals_to_run") or [],
    }


def _eval_variants(route: str) -> list[str]:
    try:
        return sorted(eval_service.eval_variants(route) or []) if eval_service.has_eval_set(route) else []
    except ValidationError:
        return []


def _conflict(exc: ValidationError) -> bool:
    return any(error.code in (CONFLICT, UNEVALUATED_CANDIDATE, MISSING_EVIDENCE)
               for error in getattr(exc, "error_list", []))


def _invalid(request, route, status=400, **forms):
    return render(request, "router/route_detail.html", _route_context(route, **forms), status=status)


@login_required
@require_POST
def route_baseline(request, name: str):
    _manager(request)
    route = get_object_or_404(Route, name=name)
    form = BaselineForm(request.POST, route=route)
    if not form.is_valid():
        return _invalid(request, route, baseline_form=form)
    try:
        route = services.route_baseline_set(route=route, baseline=form.cleaned_data["baseline"],
                                            baseline_variant=form.cleaned_data["baseline_variant"], actor=request.user,
                                            override_reason=form.cleaned_data["override_reason"])
    except ValidationError as exc:
        form.add_error(None, exc)
        return _invalid(request, route, status=409 if _conflict(exc) else 400, baseline_form=form)
    messages.success(request, f"{route.name} now runs on {route.baseline.name} ({route.baseline_variant}).")
    return redirect("router:route", name=route.name)


@login_required
@require_POST
def route_variant_add(request, name: str):
    _manager(request)
    route = get_object_or_404(Route, name=name)
    form = VariantForm(request.POST)
    if not form.is_valid():
        return _invalid(request, route, variant_form=form)
    try:
        services.prompt_variant_create(route=route, name=form.cleaned_data["name"],
                                       description=form.cleaned_data["description"], actor=request.user)
    except ValidationError as exc:
        form.add_error(None, exc)
        return _invalid(request, route, variant_form=form)
    messages.success(request, f"Prompt variant {form.cleaned_data['name']!r} added to {route.name}.")
    return redirect("router:route", name=route.name)


@login_required
@require_POST
def rollout_start(request, name: str):
    _manager(request)
    route = get_object_or_404(Route, name=name)
    form = RolloutForm(request.POST, route=route)
    if not form.is_valid():
        return _invalid(request, route, rollout_form=form)
    data = form.cleaned_data
    try:
        rollout = services.rollout_start(
            route=route, candidate=data["candidate"], candidate_variant=data["candidate_variant"],
            stages=data["stages"], actor=request.user, include_internal=data["include_internal"],
            score_margin=data["score_margin"], min_scored_calls=data["min_scored_calls"],
            retention_days=data["retention_days"], retention_margin=data["retention_margin"],
            alpha=data["alpha"], override_reason=data["override_reason"],
        )
    except MissingEvidence as exc:
        for line in exc.missing:
            form.add_error(None, line)
        # What is missing, each with the button that supplies it.
        return _invalid(request, route, status=409, rollout_form=form, evals_to_run=exc.evals_to_run)
    except ValidationError as exc:
        form.add_error(None, exc)
        return _invalid(request, route, status=409, rollout_form=form)
    messages.success(request, f"Rollout started at {rollout.percent}%.")
    return redirect("router:rollout", rollout_id=rollout.pk)


@login_required
def rollout_detail(request, rollout_id: int, stages_form=None, status=200):
    _manager(request)
    rollout = get_object_or_404(Rollout.objects.select_related("route", "candidate", "baseline", "override_by"),
                                pk=rollout_id)
    context = {
        "stages_form": stages_form or StagesForm(initial={"stages": stages_text(rollout.stages)}),
        "rollout": rollout,
        "events": selectors.rollout_events(rollout),
        "calls": selectors.arm_calls(rollout),
        "scores": selectors.arm_scores(rollout),
        "metric_links": {m.name: reverse(m.url_name) for m in scores.metrics() if m.url_name},
        "retention": selectors.arm_retention(rollout),
        "savings": selectors.rollout_savings(rollout),
    }
    share = selectors.traffic_share(rollout)
    context["share_chart"] = {
        "type": "line", "labels": share["labels"],
        "datasets": [
            {"label": "Calls on the candidate (%, internal users included)", "data": share["share"]},
            {"label": "Configured percentage", "data": share["configured"], "stepped": True, "borderDash": [4, 4]},
        ],
        "options": {"scales": {"y": {"min": 0, "max": 100}}},
    }
    template = "router/rollout.html#rollout-panel" if request.htmx and status == 200 else "router/rollout.html"
    return render(request, template, context, status=status)


@login_required
@require_POST
def rollout_stages(request, rollout_id: int):
    _manager(request)
    rollout = get_object_or_404(Rollout, pk=rollout_id)
    form = StagesForm(request.POST)
    if form.is_valid():
        try:
            services.rollout_stages_update(rollout=rollout, stages=form.cleaned_data["stages"], actor=request.user)
        except ValidationError as exc:
            form.add_error("stages", exc)
    if not form.is_valid():
        return rollout_detail(request, rollout_id, stages_form=form, status=400)
    messages.success(request, "Stages updated.")
    return redirect("router:rollout", rollout_id=rollout.pk)


ROLLOUT_ACTIONS: dict[str, Callable[..., object]] = {
    "pause": services.rollout_pause,
    "resume": services.rollout_resume,
    "roll-back": services.rollout_roll_back,
    "complete": services.rollout_complete,
}


@login_required
@require_POST
def rollout_action(request, rollout_id: int, action: str):
    _manager(request)
    rollout = get_object_or_404(Rollout, pk=rollout_id)
    func = ROLLOUT_ACTIONS.get(action)
    if func is None:
        raise Http404("No such action.")
    reason = request.POST.get("reason", "").strip()[:1000]
    kwargs = {"rollout": rollout, "actor": request.user}
    if action == "roll-back":
        kwargs["reason"] = f"Rolled back by {request.user.email}" + (f": {reason}" if reason else ".")
    elif reason:
        kwargs["reason"] = reason
    status = 200
    try:
        func(**kwargs)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        status = 409
    else:
        messages.success(request, f"Rollout {action.replace('-', ' ')}: done.")
    if request.htmx:
        # The rollout's card, and only it, is swapped in place (hx-target="#rollout-panel"); the
        # message travels with this response (lindy.middleware.htmx_messages). A refused action
        # (409) leaves the card as it was.
        # The stage history below it gains the action's event: it comes along as an out-of-band swap.
        rollout = get_object_or_404(Rollout.objects.select_related("route", "candidate", "baseline"), pk=rollout.pk)
        panel = render_to_string("router/rollout.html#rollout-panel", {"rollout": rollout}, request=request)
        history = render_to_string("router/rollout.html#stage-history",
                                   {"events": selectors.rollout_events(rollout), "oob": True}, request=request)
        return HttpResponse(panel + history, status=status)
    return redirect("router:rollout", rollout_id=rollout.pk)


@login_required
def targets(request):
    _manager(request)
    return render(request, "router/targets.html", _targets_context())


def _targets_context(**forms):
    return {
        "targets": Target.objects.select_related("host").order_by("provider", "name"),
        "providers": selectors.provider_rows(),
        "target_form": forms.get("target_form") or TargetForm(),
        "provider_form": forms.get("provider_form") or ProviderForm(),
        "audit_events": selectors.target_audit_events(),
    }


@login_required
@require_POST
def target_create(request):
    _manager(request)
    form = TargetForm(request.POST)
    if not form.is_valid():
        return render(request, "router/targets.html", _targets_context(target_form=form), status=400)
    try:
        target = services.target_create(**form.cleaned_data, actor=request.user)
    except ValidationError as exc:
        form.add_error(None, exc)
        return render(request, "router/targets.html", _targets_context(target_form=form), status=400)
    messages.success(request, f"Target {target.name} added.")
    return redirect("router:targets")


@login_required
@require_POST
def provider_create(request):
    _manager(request)
    form = ProviderForm(request.POST)
    if not form.is_valid():
        return render(request, "router/targets.html", _targets_context(provider_form=form), status=400)
    try:
        provider = services.provider_create(**form.cleaned_data, actor=request.user)
    except ValidationError as exc:
        form.add_error(None, exc)
        return render(request, "router/targets.html", _targets_context(provider_form=form), status=400)
    messages.success(request, f"Provider {provider.name} added.")
    return redirect("router:targets")


@login_required
def provider_edit(request, name: str):
    """A provider's URL, key variable and limits; each change is audited (before and after)."""
    _manager(request)
    provider = get_object_or_404(Provider, name=name)
    form = ProviderEditForm(request.POST or None, instance=provider)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                services.provider_update(provider=Provider.objects.get(pk=provider.pk), **form.cleaned_data,
                                         actor=request.user)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Provider {provider.name} saved.")
                return redirect("router:targets")
        status = 400
    return render(request, "router/provider.html", {"provider": provider, "form": form}, status=status)


def _budgets_page(request, *, status: int = 200, budget_form=None, concurrency_form=None, failed: str = ""):
    return render(request, "router/budgets.html", {
        "budgets": limits.budget_rows(), "routes": limits.route_rows(), "audit_events": limits.audit_events(),
        "budget_form": budget_form, "concurrency_form": concurrency_form, "failed": failed,
    }, status=status)


@login_required
def budgets(request):
    """Provider budgets and route concurrency: GET shows them with their current use; POST sets
    one provider's budget (or puts back its default)."""
    _manager(request)
    if request.method != "POST":
        return _budgets_page(request)
    form = BudgetForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["use_default"]:
                services.provider_budget_clear(key=data["key"], actor=request.user)
            else:
                services.provider_budget_set(key=data["key"], requests_per_minute=data["requests_per_minute"],
                                             tokens_per_minute=data["tokens_per_minute"], actor=request.user)
        except ValidationError as exc:
            form.add_error(None, exc)
    if form.errors:
        return _budgets_page(request, status=400, budget_form=form, failed=request.POST.get("key", ""))
    messages.success(request, f"Budget of {form.cleaned_data['key']} saved: every worker's next call uses it.")
    return redirect("router:budgets")


@login_required
@require_POST
def route_concurrency(request, name: str):
    _manager(request)
    route = get_object_or_404(Route, name=name)
    form = ConcurrencyForm(request.POST)
    if form.is_valid():
        limit = None if form.cleaned_data["use_default"] else form.cleaned_data["max_concurrency"]
        try:
            services.route_concurrency_set(route=route, max_concurrency=limit, actor=request.user)
        except ValidationError as exc:
            form.add_error(None, exc)
    if form.errors:
        return _budgets_page(request, status=400, concurrency_form=form, failed=route.name)
    messages.success(request, f"Concurrency of {route.name} saved.")
    return redirect("router:budgets")


@login_required
@require_POST
def eval_start(request, name: str):
    _manager(request)
    route = get_object_or_404(Route, name=name)
    form = EvalRunForm(request.POST, route=route)
    if not form.is_valid():
        return _invalid(request, route, eval_form=form)
    try:
        run = services.eval_run_start(route=route, target=form.cleaned_data["target"],
                                      variant=form.cleaned_data["variant"], actor=request.user)
    except ValidationError as exc:
        form.add_error(None, exc)
        return _invalid(request, route, eval_form=form)
    messages.success(request, f"Eval of {run.target.name} with prompt {run.variant} started: its progress is below.")
    return redirect("router:eval-run", run_id=run.pk)


@login_required
@require_POST
def optimization_start(request, name: str):
    """The route page's "Optimize prompt" button: a Celery job within the budget stated here."""
    _manager(request)
    route = get_object_or_404(Route, name=name)
    form = OptimizationForm(request.POST, route=route)
    if not form.is_valid():
        return _invalid(request, route, optimization_form=form)
    try:
        run = services.optimization_run_start(
            route=route, target=form.cleaned_data["target"], parent_variant=form.cleaned_data["parent_variant"],
            budget_usd=form.cleaned_data["budget_usd"], budget_calls=form.cleaned_data["budget_calls"],
            budget_tokens=form.cleaned_data["budget_tokens"], actor=request.user,
        )
    except ValidationError as exc:
        form.add_error(None, exc)
        return _invalid(request, route, optimization_form=form)
    return redirect("router:optimization", run_id=run.pk)


@login_required
def optimization_detail(request, run_id: int):
    """Progress, spend so far against the budget, and the candidates stored."""
    _manager(request)
    run = get_object_or_404(OptimizationRun.objects.select_related("route", "target").defer("state"), pk=run_id)
    context = {"run": run, "candidates": run.candidates.order_by("-eval_score", "name"),
               "finished": not run.is_active, "offline": gateway.offline_mode()}
    template = "router/optimization.html#optimization-progress" if request.htmx else "router/optimization.html"
    return render(request, template, context)


@login_required
def eval_run_detail(request, run_id: int):
    _manager(request)
    run = get_object_or_404(EvalRun.objects.select_related("route", "target"), pk=run_id)
    passes = evidence.run_passed(run)
    context = {"run": run, "results": run.results.all(), "finished": run.status in ("done", "failed"),
               "evidence_passes": passes, "evidence_failures": evidence.run_failures(run) if passes is False else []}
    template = "router/eval_run.html#eval-progress" if request.htmx else "router/eval_run.html"
    return render(request, template, context)


@login_required
def costs(request):
    _usage_viewer(request)
    try:
        days = int(request.GET.get("days", 14))
    except ValueError:
        days = 14
    days = days if days in COST_DAYS else 14
    route = request.GET.get("route") or None
    rows = list(selectors.cost_rows(request.user, days=days, route=route))
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "days": days, "day_options": COST_DAYS, "route": route, "page": page,
        "chart": {"type": "bar", **selectors.cost_chart(rows, days=days),
                  "options": {"scales": {"x": {"stacked": True}, "y": {"stacked": True, "title": {"display": True, "text": "USD"}}}}},
        "totals": selectors.cost_totals(rows),
        # Calls the offline rules answered (no model key): real records, but no model was paid.
        "offline_calls": sum(row["calls"] for row in rows if row["provider"] == "offline"),
        "route_names": list(selectors.owned_routes().order_by("name").values_list("name", flat=True)),
        "scope": "all teams" if permissions.is_superuser(request.user) else "your team's usage",
        "rollouts": [
            {"rollout": r, "savings": selectors.rollout_savings(r)}
            for r in Rollout.objects.select_related("route", "candidate", "baseline")[:10]
        ] if permissions.can_manage_models(request.user) else [],
    }
    template = "router/costs.html#cost-body" if request.htmx else "router/costs.html"
    return render(request, template, context)


@login_required
def my_model(request):
    if not (permissions.can_use_workspace(request.user) or permissions.can_view_team_usage(request.user)):
        raise Http404("No such page.")
    form = ChoiceForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            route, target = form.cleaned_data["route"], form.cleaned_data["target"]
            try:
                if target is None:
                    services.model_choice_clear(user=request.user, route=route)
                    messages.success(request, "Lindy chooses the model again" + (f" for {route}." if route else "."))
                else:
                    services.model_choice_set(user=request.user, target=target, route=route)
                    messages.success(request, f"You chose {target.name} for {route or 'all routes'}.")
            except ValidationError as exc:
                messages.error(request, " ".join(exc.messages))
            return redirect("router:my-model")
    choices = ModelChoice.objects.filter(user=request.user).select_related("target").order_by("route")
    assignments = [routing.assign(name, request.user) for name in routing.user_facing_routes()]
    status = 400 if request.method == "POST" else 200
    return render(request, "router/my_model.html", {
        "form": form, "choices": choices, "assignments": assignments, "targets": selectors.selectable_targets(),
    }, status=status)
