"""The whole pipeline: sources -> stored items -> summarizer -> memory agent with the verifier
loop -> one revision; with the real anthropic SDK against a local Messages API server."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from hydration import services, summarizer
from hydration.models import Fact, FileSource, Item, Run, SourceState
from hydration.services import pipeline
from lindy import services as core
from lindy.models import AgentTask
from memory.models import MemoryFile, Revision
from router.models import ModelCall
from tests.fakes.anthropic_api import FakeAnthropic, message, text_block, tool_use_block
from tests.fakes.http import Reply
from tests.fakes.slack_history import FakeSlackHistory

from .helpers import channel, installation, team_fs, user_fs

ITEM_ID = re.compile(r'<item id="(\d+)"')


def _seed_team_sources(cast):
    now = timezone.now()
    core.meeting_create(team=cast.team, owner=cast.admin, title="All-hands", public=True, occurred_at=now,
                        notes="We always deploy to staging before prod. Initech is our biggest customer; "
                              "their CTO is Jane Park.")
    task = core.task_create(team=cast.team, owner=cast.admin, title="Weekly report",
                            visibility=AgentTask.Visibility.PUBLIC)
    core.task_event_add(task=task, actor="user", content="Every Friday at 9am send the weekly report.")


def _summary_reply(recorded) -> Reply:
    """The summarizer's answer, citing the ids of the items it was actually sent."""
    text = recorded.json["messages"][0]["content"]
    ids = [int(i) for i in ITEM_ID.findall(text)]
    facts = [
        {"kind": "procedural", "text": "We always deploy to staging before prod.", "item_ids": ids[:1]},
        {"kind": "semantic", "text": "Jane Park is the CTO of Initech, our biggest customer.", "item_ids": ids[:1]},
        {"kind": "procedural", "text": "The weekly report goes out every Friday at 9am.", "item_ids": ids[1:2]},
        {"kind": "episodic", "text": "Made-up fact citing nothing real.", "item_ids": [999999]},
    ]
    return Reply(200, message([tool_use_block("record_facts", {"facts": facts})]))


FACT_ITEMS = re.compile(r'<fact kind="\w+" items="([\d,]*)">')
INDEX = "- [procedures.md](procedures.md) — how we do things\n"


def _agent_first_turn(recorded) -> Reply:
    """Read the index, write two files citing the facts' items, link only one of them."""
    cited = [[int(i) for i in group.split(",") if i] for group in FACT_ITEMS.findall(recorded.json["messages"][0]["content"])]
    jane = "# Jane Park\n\n- CTO of Initech, our biggest customer.\n"
    procedures = "# Procedures\n\n- We always deploy to staging before prod.\n- Weekly report: every Friday at 9am.\n"
    return Reply(200, message([
        text_block("Reading and writing."), tool_use_block("read_file", {"path": "index.md"}),
        tool_use_block("create_file", {"path": "people/jane-park.md", "content": jane, "sources": cited[1]}),
        tool_use_block("create_file", {"path": "procedures.md", "content": procedures, "sources": cited[0] + cited[2]}),
        tool_use_block("update_file", {"path": "index.md", "content": INDEX}),
    ]))


def _script_agent(fake):
    index = INDEX
    fake.script("POST", "/v1/messages", [_agent_first_turn])
    # Turn 2: done (the verifier will reject: people/jane-park.md is unlinked).
    fake.reply_text("Added Jane and the procedures.")
    # Turn 3: the fix.
    fake.reply_tool_use("update_file", {"path": "index.md",
                                        "content": index + "- [people/jane-park.md](people/jane-park.md) — Jane Park\n"})
    fake.reply_text("Linked people/jane-park.md from the index.")


@pytest.mark.django_db
def test_full_pipeline_with_a_verifier_rejection_round(cast):
    _seed_team_sources(cast)
    fs = team_fs(cast.team)
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        fake.script("POST", "/v1/messages", [_summary_reply])
        _script_agent(fake)
        run, created = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
        assert created
        run = services.run_execute(run_id=run.pk)
        meeting_item = Item.objects.get(filesystem=fs, source="meetings").pk

        assert run.status == Run.Status.SUCCEEDED, (run.error, run.violations)
        requests = fake.message_requests
        assert len(requests) == 5
        summarize_request = requests[0].json
        assert summarize_request["tool_choice"] == {"type": "tool", "name": "record_facts"}
        assert "procedural memory" in summarize_request["system"][0]["text"] if isinstance(
            summarize_request["system"], list) else "procedural memory" in summarize_request["system"]
        assert "We always deploy to staging before prod." in summarize_request["messages"][0]["content"]
        assert "<items>" in summarize_request["messages"][0]["content"]
        agent_request = requests[1].json
        assert {t["name"] for t in agent_request["tools"]} == {"read_file", "create_file", "update_file",
                                                              "move_file", "delete_file"}
        assert "Jane Park is the CTO of Initech" in agent_request["messages"][0]["content"]
        # The verifier's rejection reached the agent.
        rejection = requests[3].json["messages"][-1]
        assert rejection["role"] == "user" and "THE VERIFIER REJECTED THE DRAFT" in str(rejection["content"])
        assert "people/jane-park.md" in str(rejection["content"])
        # The tool results went back to the agent, matched to their calls.
        results = requests[2].json["messages"][2]["content"]
        assert [r["type"] for r in results] == ["tool_result"] * 4

    revision = run.revision
    assert revision.author_kind == Revision.AuthorKind.MEMORY_AGENT
    assert (revision.source_kind, revision.source_id) == ("hydration_run", str(run.pk))
    assert Revision.objects.filter(filesystem=fs, source_kind="hydration_run").count() == 1
    files = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))
    assert "people/jane-park.md" in files["index.md"] and "We always deploy" in files["procedures.md"]
    assert run.verifier_rounds == 1 and run.violations == []
    assert run.model_calls == 5 and run.input_tokens == 500 and run.output_tokens == 100
    assert run.cost > 0
    assert run.sources["meetings"] == {"status": "ok", "items": 1, "fetched": 1}
    assert run.sources["tasks"]["items"] == 1
    # Facts with their citations (the made-up id is dropped).
    facts = list(Fact.objects.filter(run=run).order_by("position"))
    assert [f.kind for f in facts] == ["procedural", "semantic", "procedural", "episodic"]
    assert [i.pk for i in facts[0].items.all()] == [meeting_item]
    assert facts[3].items.count() == 0
    assert set(Item.objects.filter(filesystem=fs).values_list("processed_by", flat=True)) == {run.pk}
    assert set(FileSource.objects.filter(run=run, path="people/jane-park.md").values_list("item_id", flat=True)) == {
        meeting_item}
    assert FileSource.objects.filter(run=run, path="procedures.md").count() == 2

    # Nothing new: no model call at all.
    calls = ModelCall.objects.count()
    again = services.run_now_sync(filesystem=fs, trigger="manual")
    assert again.status == Run.Status.NO_CHANGES and again.model_calls == 0
    assert ModelCall.objects.count() == calls


@pytest.mark.django_db
def test_a_draft_that_never_passes_needs_attention_and_leaves_memory_alone(cast):
    _seed_team_sources(cast)
    fs = team_fs(cast.team)
    before = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))
    with FakeAnthropic() as fake, override_settings(**fake.settings(), HYDRATION_VERIFIER_ROUNDS=1):
        fake.script("POST", "/v1/messages", [_summary_reply])
        fake.reply_tool_use("create_file", {"path": "orphan.md", "content": "# Orphan\n"})
        fake.reply_text("Done.")
        fake.reply_text("Still done.")
        run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.status == Run.Status.NEEDS_ATTENTION
    assert run.violations and run.violations[0]["path"] == "orphan.md" and run.violations[0]["kind"] == "unlinked"
    assert run.revision is None
    assert dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content")) == before
    # The items wait for the next run.
    assert Item.objects.filter(filesystem=fs, processed_by__isnull=True).count() == 2


@pytest.mark.django_db
def test_a_failing_source_still_updates_the_others(cast):
    _seed_team_sources(cast)
    inst = installation(cast.team)
    channel(cast.team, inst, "C0GENERAL", "general", team_memory=True)
    fs = team_fs(cast.team)
    with FakeSlackHistory() as slack, override_settings(**slack.settings()):
        slack.route("POST", r"/api/conversations\.history", Reply(500, "upstream down"))
        slack._patterns.insert(0, slack._patterns.pop())
        run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.sources["slack"]["status"] == "error"
    assert run.sources["meetings"]["status"] == "ok" and run.sources["tasks"]["status"] == "ok"
    assert run.status == Run.Status.SUCCEEDED and run.revision is not None
    state = SourceState.objects.get(filesystem=fs, source="slack")
    assert state.status == "error" and state.cursor == {} and state.last_success_at is None
    assert SourceState.objects.get(filesystem=fs, source="meetings").status == "ok"


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the run gets to handle it."""


@pytest.mark.django_db
def test_a_crash_leaves_no_partial_revision_and_the_rerun_has_no_duplicates(cast, monkeypatch):
    _seed_team_sources(cast)
    fs = team_fs(cast.team)
    real = pipeline._mark_processed

    def crash(run, ids):
        raise Killed()

    monkeypatch.setattr(pipeline, "_mark_processed", crash)
    first, _ = services.run_trigger(filesystem=fs, trigger="schedule", enqueue=False)
    with pytest.raises(Killed):
        services.run_execute(run_id=first.pk)
    assert not Revision.objects.filter(filesystem=fs, source_kind="hydration_run").exists()
    files_after_crash = MemoryFile.objects.filter(filesystem=fs).count()
    assert files_after_crash == 1  # only the empty index
    assert Item.objects.filter(filesystem=fs).count() == 2
    first.refresh_from_db()
    assert first.status == Run.Status.RUNNING

    # While its lease holds, nobody starts another run.
    blocked, created = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    assert not created and blocked.pk == first.pk

    monkeypatch.setattr(pipeline, "_mark_processed", real)
    Run.objects.filter(pk=first.pk).update(lease_until=timezone.now() - timezone.timedelta(seconds=1))
    # The sources answer the same items again: they are not stored twice.
    SourceState.objects.filter(filesystem=fs).update(cursor={})
    second = services.run_now_sync(filesystem=fs, trigger="manual")
    assert second.pk != first.pk and second.status == Run.Status.SUCCEEDED
    first.refresh_from_db()
    assert first.status == Run.Status.INTERRUPTED
    assert Item.objects.filter(filesystem=fs).count() == 2
    assert second.item_count == 2
    assert Revision.objects.filter(filesystem=fs, source_kind="hydration_run").count() == 1
    # A late redelivery of the dead run's task does nothing.
    assert services.run_execute(run_id=first.pk) is None
    assert Revision.objects.filter(filesystem=fs, source_kind="hydration_run").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_triggers_make_one_run(cast):
    fs = team_fs(cast.team)
    barrier = threading.Barrier(2)
    results, errors = [], []

    def trigger():
        try:
            barrier.wait()
            run, created = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
            results.append((run.pk, created))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=trigger) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert Run.objects.filter(filesystem=fs).count() == 1
    assert len({pk for pk, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, True]


@pytest.mark.django_db
def test_the_database_refuses_a_second_live_run(cast):
    from django.db import IntegrityError, transaction

    fs = team_fs(cast.team)
    Run.objects.create(filesystem=fs, trigger="manual", status=Run.Status.RUNNING)
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(filesystem=fs, trigger="manual", status=Run.Status.QUEUED)
    Run.objects.create(filesystem=fs, trigger="manual", status=Run.Status.SUCCEEDED)


@pytest.mark.django_db
def test_items_over_budget_are_split_summarized_and_merged(cast):
    fs = user_fs(cast.member)
    for i in range(6):
        core.meeting_create(team=cast.team, owner=cast.member, title=f"Sync {i}", occurred_at=timezone.now(),
                            notes=f"{cast.member.display_name}: We always review item {i} before release. "
                                  + "Detail. " * 40)
    with override_settings(HYDRATION_SUMMARIZER_INPUT_TOKENS=250):
        run = services.run_now_sync(filesystem=fs, trigger="manual")
    summarize_calls = ModelCall.objects.filter(route="memory.summarize").count()
    assert summarize_calls >= 4  # at least three parts, then the merge
    assert run.status == Run.Status.SUCCEEDED
    procedures = MemoryFile.objects.get(filesystem=fs, path="procedures.md").content
    for i in range(6):
        assert f"We always review item {i} before release." in procedures
    items = list(Item.objects.filter(filesystem=fs))
    parts = summarizer.split(items, 250)
    assert len(parts) == summarize_calls - 1 and sum(len(p) for p in parts) == 6


@pytest.mark.django_db
def test_a_runs_facts_and_citations_are_written_in_one_statement_per_table_at_most(cast):
    from django.test.utils import CaptureQueriesContext

    for n in range(3):
        core.meeting_create(team=cast.team, owner=cast.member, title=f"Sync {n}", occurred_at=timezone.now(),
                            notes=f"We always check item {n} before release. Jane Park joined Initech as CTO {n}.")
    fs = user_fs(cast.member)
    with CaptureQueriesContext(connection) as captured:
        run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.status == Run.Status.SUCCEEDED and run.fact_count == 6
    inserts = [q["sql"] for q in captured if '"hydration_fact' in q["sql"] and "INSERT" in q["sql"]]
    # PostgreSQL: one data-modifying CTE. Elsewhere (SQLite): one bulk INSERT of the facts and one
    # of their citations; never a statement per fact.
    assert len(inserts) == (1 if connection.vendor == "postgresql" else 2), inserts
    facts = list(Fact.objects.filter(run=run).order_by("position"))
    assert [f.position for f in facts] == list(range(6))
    items = {item.pk: item for item in Item.objects.filter(filesystem=fs)}
    for fact in facts:
        (item,) = fact.items.all()  # each sentence cites the meeting it came from
        assert fact.text.split(" ")[-1].rstrip(".") in items[item.pk].text


@pytest.mark.parametrize("path", ["portable", "postgresql"])
def test_both_ways_of_storing_facts_store_the_same_rows(cast, path):
    """The facts insert has a PostgreSQL statement and a portable one (SQLite, the embedded
    default): each gives every fact its position and only its stored items as citations, once."""
    if path == "postgresql" and connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's own statement")
    fs = user_fs(cast.member)
    run = Run.objects.create(filesystem=fs, trigger="manual", status=Run.Status.RUNNING)
    items = [Item.objects.create(filesystem=fs, source="tasks", external_id=f"e{n}", text=f"item {n}",
                                 occurred_at=timezone.now()) for n in range(3)]
    facts = [{"kind": "semantic", "text": "Jane is CTO.", "item_ids": [items[0].pk, items[0].pk, items[1].pk]},
             {"kind": "procedural", "text": "Always test.", "item_ids": [999_999]},
             {"kind": "episodic", "text": "Shipped.", "item_ids": [items[2].pk]}]
    cited_at = [0, 0, 2]
    cited_item = [items[0].pk, items[1].pk, items[2].pk]
    store = pipeline._store_facts_portable if path == "portable" else pipeline._store_facts_postgresql
    store(run, facts, cited_at, cited_item)
    stored = list(Fact.objects.filter(run=run).order_by("position"))
    assert [(f.position, f.kind, f.text) for f in stored] == [
        (0, "semantic", "Jane is CTO."), (1, "procedural", "Always test."), (2, "episodic", "Shipped.")]
    assert [sorted(f.items.values_list("pk", flat=True)) for f in stored] == [
        sorted([items[0].pk, items[1].pk]), [], [items[2].pk]]
