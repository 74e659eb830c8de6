"""The memory agent (route `memory.agent`): a tool loop over a draft of the file system.

The draft starts as the live files. The agent reads, creates, updates, moves and deletes
files in the draft only; when it stops calling tools the verifier checks the draft, and its
violations go back to the agent as a request to cut or reorganise, for a bounded number of
rounds. The result is the list of changes to apply as ONE revision (memory's
`changes_apply`, which verifies again), or the violations the agent never fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from memory import links
from memory.models import MemoryFile
from memory.paths import INDEX, MASTER, SPECIAL, PathError, clean_path
from memory.services import MAX_FILE_BYTES, Change
from memory.verifier import verify
from router import gateway
from router.types import Completion

from . import prompts

ROUTE = "memory.agent"
# What read_file answers for an empty file (a tool result needs some text).
EMPTY_FILE = "(this file is empty)"


class ToolError(Exception):
    pass


@dataclass
class DraftFile:
    content: str
    version: int
    tokens: int | None  # None: changed in the draft, not counted yet


@dataclass
class Draft:
    """The file system as the agent is leaving it, and the changes that lead there."""

    filesystem: object
    files: dict[str, DraftFile]
    user: object = None
    changes: list[Change] = field(default_factory=list)
    sources: dict[str, set[int]] = field(default_factory=dict)

    @classmethod
    def load(cls, filesystem, user=None) -> Draft:
        rows = MemoryFile.objects.filter(filesystem=filesystem).values_list("path", "content", "version", "tokens")
        return cls(filesystem=filesystem, user=user,
                   files={path: DraftFile(content, version, tokens) for path, content, version, tokens in rows})

    def _path(self, raw) -> str:
        try:
            return clean_path(raw)
        except PathError as exc:
            raise ToolError(f"Invalid path {raw!r}: {exc}") from None

    def _existing(self, raw) -> tuple[str, DraftFile]:
        path = self._path(raw)
        if path not in self.files:
            raise ToolError(f"There is no file {path}. Files: {', '.join(sorted(self.files)) or '(none)'}.")
        return path, self.files[path]

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

    @staticmethod
    def _text(content) -> str:
        # Refused here rather than by the final write, so the agent can fix it in its loop.
        if not isinstance(content, str):
            raise ToolError("content must be text.")
        if "\x00" in content:
            raise ToolError("content may not contain NUL characters.")
        if len(content.encode("utf-8")) > MAX_FILE_BYTES:
            raise ToolError(f"A memory file may be at most {MAX_FILE_BYTES} bytes: split it.")
        return content

    def read(self, raw) -> str:
        _, file = self._existing(raw)
        return file.content or EMPTY_FILE

    def create(self, raw, content, sources=None) -> str:
        path = self._path(raw)
        content = self._text(content)
        if path in self.files:
            raise ToolError(f"{path} already exists: use update_file.")
        self.files[path] = DraftFile(content, 1, None)
        self.changes.append(Change("create", path, content=content))
        self._cite(path, sources)
        return f"Created {path}."

    def update(self, raw, content, sources=None) -> str:
        path, file = self._existing(raw)
        content = self._text(content)
        if content == file.content:
            return f"{path} already has that content."
        self.changes.append(Change("update", path, content=content, base_version=file.version))
        file.content, file.version, file.tokens = content, file.version + 1, None
        self._cite(path, sources)
        return f"Updated {path}."

    def _relink(self, edit: Callable[[str, str], str]) -> None:
        for special in SPECIAL:
            if special in self.files:
                file = self.files[special]
                new = edit(special, file.content)
                if new != file.content:
                    self.changes.append(Change("update", special, content=new, base_version=file.version))
                    file.content, file.version, file.tokens = new, file.version + 1, None

    def move(self, raw, raw_new) -> str:
        path, file = self._existing(raw)
        new_path = self._path(raw_new)
        if path in SPECIAL or new_path in SPECIAL:
            raise ToolError("index.md and master.md cannot be moved or replaced by a move.")
        if new_path in self.files:
            raise ToolError(f"{new_path} already exists.")
        if new_path == path:
            return "Nothing to move."
        self.changes.append(Change("move", path, new_path=new_path, base_version=file.version))
        del self.files[path]
        file.version += 1
        self.files[new_path] = file
        if path in self.sources:
            self.sources[new_path] = self.sources.pop(path)
        self._relink(lambda _, text: links.rewrite_links(text, path, new_path))
        return f"Moved {path} to {new_path}; links in index.md and master.md follow."

    def delete(self, raw) -> str:
        path, file = self._existing(raw)
        if path in SPECIAL:
            raise ToolError(f"{path} cannot be deleted; update it instead.")
        self.changes.append(Change("delete", path, base_version=file.version))
        del self.files[path]
        self.sources.pop(path, None)
        self._relink(lambda special, text: links.drop_index_lines(text, path) if special == INDEX
                     else links.unlink(text, path))
        return f"Deleted {path}; its index lines and master links went with it."

    def violations(self) -> list[dict]:
        for file in self.files.values():
            if file.tokens is None:
                file.tokens = gateway.count_tokens(text=file.content, user=self.user)[0] if file.content else 0
        found = verify({p: f.content for p, f in self.files.items()}, self.filesystem.budgets,
                       tokens={p: f.tokens for p, f in self.files.items()})
        return [v.as_dict() for v in found]

    def listing(self) -> list[tuple[str, int]]:
        return [(path, f.tokens if f.tokens is not None else 0) for path, f in sorted(self.files.items())]


@dataclass
class AgentResult:
    passed: bool
    draft: Draft
    violations: list[dict]
    message: str
    rounds: int
    steps: int


def _run_tool(draft: Draft, name: str, args: dict) -> str:
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
    draft = Draft.load(filesystem, user=user)
    assignment = gateway.assign(ROUTE, user)
    system = prompts.agent_system(
        variant=assignment.prompt_variant,
        scope=scope, index=draft.files[INDEX].content if INDEX in draft.files else "",
        master=draft.files[MASTER].content if MASTER in draft.files else "",
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
