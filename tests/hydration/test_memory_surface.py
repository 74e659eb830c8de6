"""Hydration writes memory through memory's one MemoryDraft and its public surface only: no copy of
the draft logic, no private names, each changed file counted once, a typed NothingChanged."""

from __future__ import annotations

import ast
import pathlib
from collections import Counter

import pytest
from django.test import override_settings
from django.utils import timezone

import memory
from hydration import agent, services
from hydration.models import Item, Run
from lindy import services as core
from memory import services as memory_services
from memory.draft import InvalidChange, MemoryDraft, NothingChanged
from memory.models import MemoryFile
from router import gateway
from tests.fakes.anthropic_api import FakeAnthropic

from .helpers import team_fs
from .test_pipeline import _script_agent, _seed_team_sources, _summary_reply

HYDRATION = pathlib.Path(agent.__file__).resolve().parent


def _memory_imports():
    """(file, module, names, aliases) of every import of memory in hydration, functions included."""
    for path in sorted(HYDRATION.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "memory":
                        yield path, alias.name, [], [alias.asname or alias.name]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "memory":
                yield path, node.module, [a.name for a in node.names], [a.asname or a.name for a in node.names]


def test_hydration_imports_only_memorys_public_surface():
    seen = list(_memory_imports())
    assert seen, "hydration is expected to use memory"
    for path, module, names, _ in seen:
        where = f"{path.relative_to(HYDRATION.parent)}: {module}"
        if module == "memory":  # `from memory import services`: each name is a module
            for name in names:
                assert f"memory.{name}" in memory.PUBLIC_MODULES, where
        else:
            assert module in memory.PUBLIC_MODULES, where
        assert not any(name.startswith("_") for name in names), where
        assert not any(part.startswith("_") for part in module.split(".")), where


def test_hydration_reads_no_private_attribute_of_a_memory_module():
    for path in sorted(HYDRATION.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        bound = {alias for p, module, names, aliases in _memory_imports() if p == path
                 for alias in aliases if module == "memory" or not names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                assert not node.attr.startswith("_"), f"{path.name}: {node.value.id}.{node.attr}"


def test_the_agent_module_keeps_no_copy_of_the_draft_logic():
    tree = ast.parse((HYDRATION / "agent.py").read_text())
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "memory.verifier" not in modules and "memory.links" not in modules and "memory.draft" in modules
    defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    assert not defined & {"MemoryDraft", "DraftFile", "_step", "_relink", "_text", "_link_fixes", "_check_content"}


@pytest.mark.django_db
def test_the_agents_tools_edit_memorys_draft(cast, monkeypatch):
    applied, fixes = [], []
    real_apply, real_fixes = MemoryDraft.apply, MemoryDraft._link_fixes
    monkeypatch.setattr(MemoryDraft, "apply", lambda self, change: applied.append(change) or real_apply(self, change))
    monkeypatch.setattr(MemoryDraft, "_link_fixes", lambda self, edit: fixes.append(edit) or real_fixes(self, edit))
    workspace = agent.AgentDraft.load(team_fs(cast.team))
    assert isinstance(workspace.draft, MemoryDraft)
    run = agent._run_tool
    run(workspace, "create_file", {"path": "a.md", "content": "A", "sources": [1]})
    run(workspace, "update_file", {"path": "index.md", "content": "- [a.md](a.md)\n"})
    assert run(workspace, "update_file", {"path": "index.md", "content": "- [a.md](a.md)\n"}).endswith(
        "already has that content.")
    run(workspace, "move_file", {"path": "a.md", "new_path": "b.md"})
    # The label repeated the old path: it follows the move (issue 18).
    assert workspace.read("index.md") == "- [b.md](b.md)\n" and workspace.sources == {"b.md": {1}}
    run(workspace, "delete_file", {"path": "b.md"})
    assert workspace.read("index.md") == agent.EMPTY_FILE and workspace.sources == {}
    assert [c.op for c in applied] == ["create", "update", "update", "move", "update", "delete", "update"]
    assert len(fixes) == 2  # one for the move, one for the delete
    assert workspace.changes == workspace.draft.changes and workspace.violations() == []
    with pytest.raises(agent.ToolError, match="already exists"):
        run(workspace, "create_file", {"path": "index.md", "content": "x"})
    with pytest.raises(agent.ToolError, match="There is no file"):
        run(workspace, "read_file", {"path": "gone.md"})


@pytest.mark.django_db
def test_a_hydration_run_counts_each_changed_file_once(cast):
    """The agent's draft counts each text it verifies with the model's counter; the revision
    reuses those counts (it used to count every changed file a second time)."""
    _seed_team_sources(cast)
    fs = team_fs(cast.team)
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        fake.script("POST", "/v1/messages", [_summary_reply])
        _script_agent(fake)
        run = services.run_now_sync(filesystem=fs, trigger="manual")
        counted = Counter(r.json["messages"][0]["content"] for r in fake.requests
                          if r.path == "/v1/messages/count_tokens")
    assert run.status == Run.Status.SUCCEEDED, (run.error, run.violations)
    changed = set(run.revision.changes.values_list("path", flat=True))
    assert changed == {"index.md", "people/jane-park.md", "procedures.md"}
    live = {f.path: f for f in MemoryFile.objects.filter(filesystem=fs)}
    assert all(live[path].content in counted for path in changed)
    assert all(times == 1 for times in counted.values()), counted
    assert all(live[path].tokens_exact for path in changed)


@pytest.mark.django_db
def test_an_offline_run_with_a_verifier_round_counts_each_version_once(cast, monkeypatch):
    texts: list[str] = []
    real = gateway.count_tokens
    monkeypatch.setattr(gateway, "count_tokens", lambda *, text, **kw: texts.append(text) or real(text=text, **kw))
    fs = team_fs(cast.team)
    notes = " ".join(f"We always check release step {i} before deploying." for i in range(8))
    core.meeting_create(team=cast.team, owner=cast.admin, title="Process", public=True, occurred_at=timezone.now(),
                        notes=notes)
    services.run_now_sync(filesystem=fs, trigger="manual")
    # A tighter budget: the next run's draft is over it, and the verifier round cuts old lines.
    fs.file_token_budget = 60
    fs.save()
    core.meeting_create(team=cast.team, owner=cast.admin, title="Process again", public=True,
                        occurred_at=timezone.now(), notes="We always check release step 8 before deploying.")
    texts.clear()
    run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.status == Run.Status.SUCCEEDED and run.verifier_rounds == 1
    assert texts and Counter(texts).most_common(1)[0][1] == 1


def _offline_run_raising(cast, monkeypatch, error):
    core.meeting_create(team=cast.team, owner=cast.admin, title="Sync", public=True, occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")

    def refuse(**kwargs):
        raise error

    monkeypatch.setattr(memory_services, "changes_apply", refuse)
    fs = team_fs(cast.team)
    return fs, services.run_now_sync(filesystem=fs, trigger="manual")


@pytest.mark.django_db
def test_nothing_changed_is_caught_by_type_not_by_message(cast, monkeypatch):
    fs, run = _offline_run_raising(cast, monkeypatch, NothingChanged("The files are already like that."))
    assert run.status == Run.Status.NO_CHANGES and run.revision is None
    assert not Item.objects.filter(filesystem=fs, processed_by__isnull=True).exists()


@pytest.mark.django_db
def test_an_invalid_change_that_mentions_nothing_changed_is_still_a_failure(cast, monkeypatch):
    fs, run = _offline_run_raising(cast, monkeypatch, InvalidChange("Nothing changed: but said by another error."))
    assert run.status == Run.Status.FAILED and "another error" in run.error
    assert Item.objects.filter(filesystem=fs, processed_by__isnull=True).exists()
