"""Wires the learner into the product; called from drafting's AppConfig.ready()."""

from __future__ import annotations


def ready(label: str) -> None:
    from lindy import navigation, schedules
    from router.routing import register_route
    from router.services import register_optimizable
    from router.services.evals import register_request_builder

    from .. import selectors as drafting_selectors
    from . import evals, offline, permissions, prompts, selectors, tasks  # noqa: F401  (offline rules; tasks by name)

    register_route(prompts.INIT_ROUTE, owner=label, label="Draft learning: first context",
                   description="Composes a user's first context document from their answered threads (then gated).")
    register_route(prompts.PROPOSE_ROUTE, owner=label, label="Draft learning: proposing edits",
                   description="Proposes an edit to a user's context document from draft/sent pairs.")
    register_route(prompts.JUDGE_ROUTE, owner=label, label="Draft learning: judging drafts",
                   description="Judges which of two drafts is closer to the email the user really sent.")
    prompts.register()
    # The judge and the proposer are measured and optimized with the learner's own builders.
    register_request_builder(prompts.JUDGE_ROUTE, evals.judge_eval_request, variants=lambda: prompts.JUDGE,
                             verdict=evals.judge_verdict)
    register_request_builder(prompts.PROPOSE_ROUTE, evals.propose_eval_request, variants=lambda: prompts.PROPOSE)
    register_optimizable(prompts.JUDGE_ROUTE, components=evals.judge_components)
    register_optimizable(prompts.PROPOSE_ROUTE, components=evals.propose_components)
    schedules.register(schedules.Periodic(
        name="drafting.learner_cadence", task="drafting.tasks.learner_cadence", every_seconds=3600,
        description="Hourly: runs the learner for each user with enough new meaningful draft/sent pairs "
                    "(LINDY_LEARNER_PAIRS_PER_RUN), within the daily floor and ceiling.",
    ))
    navigation.register(navigation.NavItem(
        "learner", "Draft learning", "drafting-learner", permissions.can_view_learner, order=46,
    ))
    drafting_selectors.register_proposal_counts(selectors.proposal_counts)
