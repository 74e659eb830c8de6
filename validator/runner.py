"""The seam through which the validator's review pages act on what the user decided.

The validator judges and records; it never runs an action or the agent. The app that does
(agent) registers an ActionRunner when it starts. With none registered, authorizing fails
closed: the decision is claimed and the failure is recorded, nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class Execution:
    """What running an authorized action did, in the words stored on the decision."""

    ok: bool
    content: str
    adapter: str = ""
    data: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"ok": self.ok, "content": self.content, "adapter": self.adapter, "data": self.data}


class ActionRunner(Protocol):
    def execute(self, decision) -> Execution:
        """Run the decision's action once. Never raises: a failure is an Execution with ok=False."""

    def recorded_only(self, tool: str, team_ids: list[int], user=None) -> bool:
        """True when running this tool for these teams and this user only writes it down."""

    def continue_task(self, task_id: int) -> None:
        """Let the assistant continue the task with the user's newest instruction (in the background)."""


_runner: ActionRunner | None = None


def register(runner: ActionRunner) -> None:
    global _runner
    _runner = runner


class NoRunner(RuntimeError):
    pass


def get() -> ActionRunner:
    if _runner is None:
        raise NoRunner("No app that runs actions is installed.")
    return _runner
