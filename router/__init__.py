"""The router: the one door every model call goes through.

Public surface — what other apps may import (lint-imports' "router-public-surface" contract and
tests/router/test_public_surface.py hold them to it); every other module of this package is
the router's own:

- `router.gateway` — `complete(...)`, the one model call; `router.types` — its request,
  completion and errors (`Completion`, `CompletionRequest`, `ModelError`, `NO_SPEECH_MODEL`).
- `router.routing` — `register_route(...)` in an app's `ready`, and `Assignment` (who is served
  by which target and variant).
- `router.variants` — `register({route: descriptions}, owner=)`, an app's prompt variants.
- `router.offline` — the offline provider's policy helpers (`offline_policy`, `OfflineReply`,
  `tool_call`, `estimate_tokens`).
- `router.budgets` — `BudgetExhausted` and `background()`, the provider budget.
- `router.models` — the rows other apps read (`Route`, `Target`, `ModelCall`, `CallScore`).
- `router.services` — the writes and registries other apps use (`call_score_record`,
  `register_metric`, `register_optimizable`, `register_guardrail_hook`); `router.services.evals` —
  the eval registries (`register_request_builder`, `register_case_source`, `register_eval_gate`,
  `Shortcut`) and the eval helpers.
- `router.api` — mounted by the composition root (lindy.api_root) only.
"""

PUBLIC_MODULES = (
    "router.api",
    "router.budgets",
    "router.gateway",
    "router.models",
    "router.offline",
    "router.routing",
    "router.services",
    "router.services.evals",
    "router.types",
    "router.variants",
)
