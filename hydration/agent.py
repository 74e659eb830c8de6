"""The memory agent (route `memory.agent`): a tool loop over a draft of the file system.

The draft is memory's own `MemoryDraft` (memory.draft), loaded from the live files: the agent reads,
creates, updates, moves and deletes files in the draft only, with the same rules, link fixes
and content checks as every other writer of memory. When it stops calling tools the verifier
checks the draft, and its violations go back to the agent as a request to cut or reorganise,
for a bounded number of rounds. The result is the list of changes to apply as ONE revision
(memory's `changes_apply`, which verifies again, reusing the draft's token counts), or the
violations the agent never fixed.

Memory is reached only through its public surface (`memory.draft`, `memory.paths`): a write the
draft refuses comes back to the agent as a tool error it can fix in its loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from memory.draft import Change, MemoryDraft, MemoryWriteError, TokenCounter, check_path
from memory.paths import INDEX, MASTER
from router import gateway
from router.types import Completion

from . import prompts

ROUTE = prompts.AGENT_ROUTE
# What read_file answers for an empty file (a tool result needs some text).
EMPTY_FILE = "(this file is empty)"
# The kind of problem a refused write leaves (next to the verifier's kinds).
REFUSED_WRITE = "refused_write"


class ToolError(Exception):
    pass


@dataclass
class AgentDraft:
    """The agent's side of a memory `MemoryDraft`: tool-sized answers, refusals as ToolError, and
    the items each file cites (provenance)."""

    draft: MemoryDraft
    sources: dict[str, set[int]] = field(default_factory=dict)
    # Writes the draft refused (path -> why) that no later write to the same path made good:
    # the facts they carried are not in the draft, so they count as problems like a violation.
    refused: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, filesystem, user=None) -> AgentDraft:
        return cls(MemoryDraft.load(filesystem, counter=TokenCounter(user)))

    @property
    def filesystem(self):
        return self.draft.filesystem

    @property
    def changes(self) -> list[Change]:
        """The changes that took effect, to apply as one revision."""
        return self.draft.changes

    @property
    def counter(self) -> TokenCounter:
        return self.draft.counter

    def _apply(self, change: Change):
        try:
            record = self.draft.apply(change)
        except MemoryWriteError as exc:
            self._refuse(change.path, exc.message)
            raise ToolError(exc.message) from None
        self.refused.pop(check_path(change.path), None)
        return record

    def _refuse(self, raw, message: str) -> None:
        try:
            path = check_path(raw)
        except MemoryWriteError:
            return  # a path that names no file: the tool error alone tells the agent
        self.refused[path] = message

    def _existing(self, raw) -> str:
        try:
            path = check_path(raw)
        except MemoryWriteError as exc:
            raise ToolError(exc.message) from None
        if path not in self.draft.files:
            raise ToolError(f"There is no file {path}. Files: {', '.join(sorted(self.draft.files)) or '(none)'}.")
        return path

    def _cite(self, path: str, sources) -> None:
        ids = set()
        for value in sources or []:
            try:
                item_id = int(value)
            except (TypeError, ValueError):
                continue
            if 0 < item_id < 2**63:  # a model's stray number must not overflow the database's integer
                ids.add(item_id)
        if ids:
            self.sources.setdefault(path, set()).update(ids)

    def read(self, raw) -> str:
        return self.draft.content(self._existing(raw)) or EMPTY_FILE

    def create(self, raw, content, sources=None) -> str:
        record = self._apply(Change("create", raw, content=content))
        self._cite(record.path, sources)
        return f"Created {record.path}."

    def update(self, raw, content, sources=None) -> str:
        path = self._existing(raw)
        record = self._apply(Change("update", path, content=content))
        if record is None:
            return f"{path} already has that content."
        self._cite(path, sources)
        return f"Updated {path}."

    def move(self, raw, raw_new) -> str:
        path = self._existing(raw)
        try:
            done = self.draft.move(path, raw_new)
        except MemoryWriteError as exc:
            raise ToolError(exc.message) from None
        if not done:
            return "Nothing to move."
        new_path = done[0].new_path or path
        if path in self.sources:
            self.sources[new_path] = self.sources.pop(path)
        return f"Moved {path} to {new_path}; links in index.md and master.md follow."

    def delete(self, raw) -> str:
        path = self._existing(raw)
        try:
            self.draft.delete(path)
        except MemoryWriteError as exc:
            raise ToolError(exc.message) from None
        self.sources.pop(path, None)
        self.refused.pop(path, None)
        return f"Deleted {path}; its index lines and master links went with it."

    def violations(self) -> list[dict]:
        """The verifier's violations, and the refused writes still standing: both keep facts out."""
        refused = [{"path": path, "kind": REFUSED_WRITE,
                    "detail": f"Your write to {path} was refused: {message} Its facts are not in the draft."}
                   for path, message in sorted(self.refused.items())]
        return [v.as_dict() for v in self.draft.violations()] + refused

    def listing(self) -> list[tuple[str, int]]:
        return [(path, f.tokens if f.tokens is not None else 0) for path, f in sorted(self.draft.files.items())]


@dataclass
class AgentResult:
    passed: bool
    draft: AgentDraft
    violations: list[dict]
    message: str
    rounds: int
    steps: int


def _run_tool(draft: AgentDraft, name: str, args: dict) -> str:
    if not isinstance(args, dict):
        raise ToolError("Tool input must be an object.")
    if name == "read_file":
        return draft.read(args.get("path"))
    if name == "create_file":
        return draft.create(args.get("path"), args.get("content"), args.get("sources"))
    if name == "update_file":
        return draft.update(args.get("path"), args.get("content"), args.get("sources"))
    if name == "move_file":
        return draft.move(args.get("path"), args.get("new_path"))
    if name == "delete_file":
        return draft.delete(args.get("path"))
    raise ToolError(f"Unknown tool {name!r}.")


def _assistant(completion: Completion) -> dict:
    message = completion.assistant_message()
    if not message["content"]:
        message["content"] = [{"type": "text", "text": "(done)"}]
    return message


def run_agent(*, filesystem, facts: list[dict], scope: str, user=None, team=None,
              on_call: Callable[[Completion], None] = lambda c: None,
              on_progress: Callable[[str], None] = lambda s: None) -> AgentResult:
    draft = AgentDraft.load(filesystem, user=user)
    files = draft.draft.files
    assignment = gateway.assign(ROUTE, user)
    system = prompts.agent_system(
        variant=assignment.prompt_variant,
        scope=scope, index=draft.draft.content(INDEX) if INDEX in files else "",
        master=draft.draft.content(MASTER) if MASTER in files else "",
        file_budget=filesystem.file_token_budget, always_budget=filesystem.always_loaded_token_budget,
    )
    messages: list[dict] = [{"role": "user", "content": prompts.agent_task(
        facts=facts, files=draft.listing(), variant=assignment.prompt_variant)}]
    max_rounds = settings.HYDRATION_VERIFIER_ROUNDS
    rounds = steps = 0
    message = ""
    violations: list[dict] = []
    while True:
        if steps >= settings.HYDRATION_AGENT_MAX_STEPS:
            violations = draft.violations()
            break
        completion = gateway.complete(route=ROUTE, user=user, team=team, assignment=assignment, system=system,
                                      messages=messages, tools=prompts.AGENT_TOOLS, metadata={"round": rounds})
        steps += 1
        on_call(completion)
        messages.append(_assistant(completion))
        if completion.tool_calls:
            results = []
            for call in completion.tool_calls:
                try:
                    output, is_error = _run_tool(draft, call.name, call.input), False
                except ToolError as exc:
                    output, is_error = str(exc), True
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": output or "(empty)",
                                **({"is_error": True} if is_error else {})})
            messages.append({"role": "user", "content": results})
            on_progress(f"Memory agent: step {steps}, {len(draft.changes)} change(s) in the draft")
            continue
        message = completion.text.strip()
        violations = draft.violations()
        if not violations:
            break
        rounds += 1
        if rounds > max_rounds:
            break
        on_progress(f"Verifier rejected the draft ({len(violations)} problem(s)); round {rounds} of {max_rounds}")
        messages.append({"role": "user", "content": prompts.verifier_feedback(violations, round_no=rounds,
                                                                              rounds=max_rounds)})
    return AgentResult(passed=not violations, draft=draft, violations=violations, message=message,
                       rounds=rounds, steps=steps)
