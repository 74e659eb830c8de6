"""What a claimed hydration run does: fetch every enabled source (storing items before anything
else), summarize every item no revision has taken in yet, let the memory agent work on a draft,
and write ONE revision when the verifier passes it. Every write checks the run is still this
attempt's, so a worker whose run was taken over writes nothing.
"""

from __future__ import annotations

import logging
from typing import Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, CharField, F, PositiveSmallIntegerField, QuerySet, Value, When
from django.utils import timezone

from lindy import bulk, failures, jobs
from memory import services as memory_services
from memory.models import FileSystem

from .. import accounting, agent, events, provenance, summarizer
from ..models import Fact, FileSource, Item, Run, SourceState
from ..sources import SOURCES, NotConnected
from .sources import _STATE_FIELDS, ITEM_BATCH, items_store, source_states_ensure


class Progress(Protocol):
    """What the pipeline reports as it goes (runs._Progress keeps the run's row up to date)."""

    def stage(self, text: str) -> None: ...

    def call(self, completion) -> None: ...

logger = logging.getLogger(__name__)
Status = Run.Status

def _fetch_one(run: Run, state: SourceState, unsaved: list[SourceState]) -> dict:
    """Fetch one source and store its items with its new cursor, in one transaction. A source
    with nothing to store (not connected, failed, or no items) only has its state to record: it
    joins `unsaved`, which the caller writes for every such source in one statement."""
    source = SOURCES[state.source]
    now = timezone.now()
    try:
        fetched = source.fetch(run.filesystem, dict(state.cursor or {}))
    except NotConnected as exc:
        state.status, state.last_error, state.last_error_at = SourceState.Status.NOT_CONNECTED, str(exc), now
        unsaved.append(state)
        return {"status": "not_connected", "items": 0, "detail": str(exc)}
    except Exception as exc:  # a source's failure is recorded; the others go on
        logger.warning("hydration source %s failed for fs %s: %s", state.source, run.filesystem_id, exc)
        failures.capture(exc, kind="hydration_source", route=f"hydration.{state.source}", **_failure_context(run),
                         log=[*_failure_log(run), {"actor": "source", "name": state.source,
                                                   "text": f"fetch from cursor {sorted(state.cursor or {})}"}])
        message = f"{type(exc).__name__}: {exc}"[:2000]
        state.status, state.last_error, state.last_error_at = SourceState.Status.ERROR, message, now
        unsaved.append(state)
        return {"status": "error", "items": 0, "error": message}
    state.cursor, state.status, state.last_success_at = fetched.cursor, SourceState.Status.OK, now
    if not fetched.items:
        unsaved.append(state)
        return {"status": "ok", "items": 0, "fetched": 0}
    # The cursor moves only once the items it covers are stored.
    with transaction.atomic():
        new = items_store(filesystem=run.filesystem, source=state.source, items=fetched.items, run=run)
        state.save(update_fields=["cursor", "status", "last_success_at"])
        if new:
            transaction.on_commit(lambda: events.items_stored.send(
                sender=Item, filesystem_id=run.filesystem_id, source=state.source, run_id=run.pk, new=new))
    return {"status": "ok", "items": new, "fetched": len(fetched.items)}


def _scope(fs: FileSystem) -> str:
    if fs.kind == FileSystem.Kind.TEAM:
        assert fs.team is not None  # memory_fs_one_holder: a team file system has a team
        return f"the {fs.team.name} team"
    assert fs.owner is not None  # memory_fs_one_holder: a user file system has an owner
    return f"the user {fs.owner.email}"


def _failure_context(run: Run) -> dict:
    """Whose run it was, for lindy.failures."""
    user, team = _actors(run.filesystem)
    if team is None and user is not None:
        team = user.memberships.values_list("team_id", flat=True).order_by("team_id").first()
    return {"run": f"hydration run {run.pk}", "user_id": getattr(user, "pk", None),
            "team_id": getattr(team, "pk", team)}


def _failure_log(run: Run) -> list[dict]:
    """The run's steps so far, for the failure's log: no item text, only what the run did."""
    steps = [{"actor": "run", "name": f"hydration run {run.pk}",
              "text": f"started ({run.get_trigger_display()}), attempt {run.attempts}, {run.filesystem.kind} memory"}]
    for source, outcome in (run.sources or {}).items():
        steps.append({"actor": "source", "name": source,
                      "text": f"{outcome.get('status')}, {outcome.get('items', 0)} new item(s)"})
    if run.stage:
        steps.append({"actor": "run", "name": "stage", "text": run.stage})
    return steps


def _actors(fs: FileSystem):
    if fs.kind == FileSystem.Kind.TEAM:
        return None, fs.team
    return fs.owner, None


def _ours(run: Run) -> QuerySet[Run]:
    """The run's row while this delivery still holds it (lindy.jobs.held: the same attempt and task)
    and it is running: a worker whose run was taken over (its heartbeat went quiet, another attempt
    claimed it) or that already finished it finds nothing, and writes nothing."""
    return Run.objects.filter(jobs.held(run), status=Status.RUNNING)


def _finish(run: Run, status: Status, **fields) -> Run:
    if not _ours(run).exists():
        run.refresh_from_db()
        return run
    return _finished(run, status, **fields)


def _finished(run: Run, status: Status, **fields) -> Run:
    """Write the run's end; for a caller that holds the run's row lock and checked it is still
    this attempt's (else _finish)."""
    run.status = status
    run.finished_at = timezone.now()
    run.stage = {Status.SUCCEEDED: "Done", Status.NO_CHANGES: "Done: nothing new",
                 Status.NEEDS_ATTENTION: "Needs attention: nothing written, the items wait for the next run",
                 Status.FAILED: "Failed"}.get(status, status)
    for name, value in fields.items():
        setattr(run, name, value)
    run.save()
    return run


def _settle(run: Run, outcome: accounting.Outcome, status: Status, **fields) -> Run:
    """Mark the items and finish, only while the run is still this attempt's: a worker whose run
    was taken over (its heartbeat went quiet for a while) marks nothing."""
    with transaction.atomic():
        if not _ours(run).select_for_update().exists():
            run.refresh_from_db()
            return run
        _mark_processed(run, outcome)
        return _finished(run, status, **fields)


def _by_note(notes: dict[int, str]) -> Case:
    """One CASE over the distinct notes, so a single UPDATE writes each item its own note."""
    groups: dict[str, list[int]] = {}
    for pk, note in notes.items():
        groups.setdefault(note, []).append(pk)
    return Case(*[When(pk__in=pks, then=Value(note)) for note, pks in groups.items()],
                default=F("processed_note"), output_field=CharField())


def _mark_processed(run: Run, outcome: accounting.Outcome) -> None:
    """Processed (taken in, or dropped by a rule that says why) in one UPDATE; the kept ones get
    their reason in another. Never more statements for more items."""
    done = {**outcome.processed, **outcome.dropped}
    if done and bulk.supported():  # each item its note from an array, not a CASE to compile
        bulk.rows_update(Item, list(done), {"processed_note": list(done.values())}, same={"processed_by": run.pk},
                         where_null=["processed_by"])
    elif done:
        Item.objects.filter(pk__in=list(done), processed_by__isnull=True).update(
            processed_by=run, processed_note=_by_note(done))
    if outcome.kept:
        Item.objects.filter(pk__in=list(outcome.kept), processed_by__isnull=True).update(
            processed_note=_by_note(outcome.kept),
            left_out=Case(When(pk__in=list(outcome.left_out), then=F("left_out") + 1), default=F("left_out"),
                          output_field=PositiveSmallIntegerField()))


def _keep_all(item_ids: list[int], note: str) -> None:
    Item.objects.filter(pk__in=item_ids, processed_by__isnull=True).update(processed_note=note[:500])


def _store_facts(run: Run, facts: list[dict], by_id: dict[int, Item]) -> None:
    """The run's facts and their citations in ONE statement, whatever their number: the facts'
    INSERT (a data-modifying CTE) hands its new ids to the citations' INSERT, joined on position.
    No model instance per row: for hundreds of facts and citations the ORM's per-object work was
    most of this step. Only a run taken over from a dead worker (a later attempt) can have facts
    already: they go first."""
    if run.attempts > 1:
        run.facts.all().delete()
    if not facts:
        return
    cited_at, cited_item = [], []
    for position, fact in enumerate(facts):
        for item_id in dict.fromkeys(fact["item_ids"]):
            if item_id in by_id:
                cited_at.append(position)
                cited_item.append(item_id)
    if connection.vendor == "postgresql":
        _store_facts_postgresql(run, facts, cited_at, cited_item)
    else:
        _store_facts_portable(run, facts, cited_at, cited_item)


def _store_facts_portable(run: Run, facts: list[dict], cited_at: list[int], cited_item: list[int]) -> None:
    """Any other database (SQLite, the embedded default): two bulk INSERTs. bulk_create hands back
    the facts' ids (RETURNING), in order, so a citation finds its fact by position."""
    rows = Fact.objects.bulk_create(
        [Fact(run=run, position=position, kind=f["kind"], text=f["text"]) for position, f in enumerate(facts)],
        batch_size=ITEM_BATCH)
    Through = Fact.items.through
    Through.objects.bulk_create(
        [Through(fact_id=rows[position].pk, item_id=item_id) for position, item_id in zip(cited_at, cited_item, strict=True)],
        batch_size=ITEM_BATCH, ignore_conflicts=True)


def _store_facts_postgresql(run: Run, facts: list[dict], cited_at: list[int], cited_item: list[int]) -> None:
    q = connection.ops.quote_name
    sql = (f"WITH fact AS (INSERT INTO {q(Fact._meta.db_table)} (run_id, position, kind, text) "
           "SELECT %s, * FROM UNNEST(%s::integer[], %s::text[], %s::text[]) RETURNING id, position) "
           f"INSERT INTO {q(Fact.items.through._meta.db_table)} (fact_id, item_id) "
           "SELECT fact.id, cited.item_id FROM fact JOIN UNNEST(%s::integer[], %s::bigint[]) AS cited(position, item_id) "
           "USING (position) ON CONFLICT DO NOTHING")
    with connection.cursor() as cursor:
        cursor.execute(sql, [run.pk, list(range(len(facts))), [f["kind"] for f in facts], [f["text"] for f in facts],
                             cited_at, cited_item])


def describe_changes(changes) -> str:
    """What a revision did, from its own changes (op, path, old_path): the run's message names
    nothing else, whatever the agent said it did."""
    created: list[str] = []
    updated: list[str] = []
    moved: list[str] = []
    deleted: list[str] = []
    for op, path, old_path in changes:
        if op == "create":
            created.append(path)
        elif op == "update" and path not in created and path not in updated:
            updated.append(path)
        elif op == "move":
            moved.append(f"{old_path} to {path}")
        elif op == "delete":
            deleted.append(path)
    parts = [f"{verb} {', '.join(paths)}" for verb, paths in
             (("created", created), ("updated", updated), ("moved", moved), ("deleted", deleted)) if paths]
    return ("; ".join(parts).capitalize() + ".") if parts else "No file changed."


def _advice(fs: FileSystem, violations: list[dict], kept: int) -> str:
    """What a person can do so the kept items fit next time: what to split, which budget to raise."""
    lines = [f"Nothing was written; {kept} item(s) kept for the next run. What stopped the memory agent:"]
    for v in violations:
        path, kind, detail = v.get("path", ""), v.get("kind", ""), v.get("detail", "")
        if kind == agent.REFUSED_WRITE:
            line = f"Split {path} into smaller files linked from index.md ({detail})"
        elif kind == "over_budget":
            line = (f"Split {path} into smaller linked files, or raise this memory's per-file budget "
                    f"(now {fs.file_token_budget} tokens): {detail}")
        elif kind == "always_loaded_over_budget":
            line = ("Move detail out of index.md and master.md into linked files, or raise the always-loaded "
                    f"budget (now {fs.always_loaded_token_budget} tokens).")
        elif kind == "unlinked":
            line = f"Link {path} from index.md or master.md, or delete it."
        else:
            line = f"{path}: {detail}"
        if f"- {line}" not in lines:
            lines.append(f"- {line}")
    return "\n".join(lines[:21])


def _pipeline(run: Run, progress: Progress) -> Run:
    fs = run.filesystem
    user, team = _actors(fs)
    run.sources = {}
    unsaved: list[SourceState] = []
    for state in source_states_ensure(filesystem=fs):
        if not state.enabled:
            run.sources[state.source] = {"status": "off", "items": 0}
            continue
        progress.stage(f"Fetching {SOURCES[state.source].kind}")
        run.sources[state.source] = _fetch_one(run, state, unsaved)
    # Only this run writes these fields of its file system's states (one live run per file system).
    SourceState.objects.bulk_update(unsaved, _STATE_FIELDS)
    progress.stage("Collecting new items")

    pending = list(Item.objects.filter(filesystem=fs, processed_by__isnull=True)
                   .order_by("occurred_at", "pk")[: settings.HYDRATION_MAX_ITEMS_PER_RUN])
    run.item_count = len(pending)
    if not pending:
        return _finish(run, Status.NO_CHANGES)

    progress.stage(f"Summarizing {len(pending)} item(s)")
    summary = summarizer.summarize(pending, scope=_scope(fs), user=user, team=team, on_call=progress.call)
    by_id = {item.pk: item for item in pending}
    _store_facts(run, summary.facts, by_id)
    run.fact_count = len(summary.facts)
    if not summary.facts:
        return _settle(run, accounting.Outcome(processed=dict.fromkeys(by_id, accounting.NO_FACT)), Status.NO_CHANGES,
                       agent_message="Nothing worth remembering in the new items.")

    progress.stage(f"Memory agent: working on {len(summary.facts)} fact(s)")
    result = agent.run_agent(filesystem=fs, facts=summary.facts, scope=_scope(fs), user=user, team=team,
                             on_call=progress.call, on_progress=progress.stage)
    run.verifier_rounds = result.rounds
    if not result.passed:
        # The live file system is untouched; every item waits for the next run.
        return _needs_attention(run, result.violations, list(by_id))

    outcome = accounting.account(items=pending, facts=summary.facts, draft=result.draft,
                                 max_left_out=settings.HYDRATION_ITEM_MAX_TRIES)
    if not result.draft.changes:
        what = "No file changed" + ("" if outcome.kept or outcome.dropped else ": every fact was already in memory")
        return _settle(run, outcome, Status.NO_CHANGES, violations=[], agent_message=_outcome_message(what, outcome))

    progress.stage("Writing the revision")
    return _commit(run, result, outcome, by_id)


def _needs_attention(run: Run, violations: list[dict], item_ids: list[int]) -> Run:
    advice = _advice(run.filesystem, violations, len(item_ids))
    _keep_all(item_ids, "Kept for the next run: the run that took it in needs attention (see its message).")
    return _finish(run, Status.NEEDS_ATTENTION, violations=violations, agent_message=advice[:5000])


def _outcome_message(what: str, outcome: accounting.Outcome) -> str:
    tail = ""
    if outcome.kept:
        tail += f" {len(outcome.kept)} item(s) kept for the next run: the agent wrote none of their facts."
    if outcome.dropped:
        tail += f" {len(outcome.dropped)} item(s) dropped, left out by the agent run after run."
    return (what.rstrip(".") + "." + tail)[:5000]


def _commit(run: Run, result: agent.AgentResult, outcome: accounting.Outcome, items: dict[int, Item]) -> Run:
    """`items`: the run's pending items by id (every item the outcome names is one of them)."""
    fs = run.filesystem
    records = result.draft.draft.records
    message = f"Hydration run {run.pk}: " + describe_changes((r.op, r.path, r.old_path) for r in records)
    # Whose words the revision holds: every item the run summarized (taken in, kept or dropped:
    # the agent saw all their facts), so a fact it left uncited cannot pass as the owner's.
    summarized = {*outcome.processed, *outcome.kept, *outcome.dropped}
    words_of, words_from = provenance.words_of(item for pk, item in items.items() if pk in summarized)
    try:
        with transaction.atomic():
            # A run whose lease another trigger took over must not write anything.
            if not _ours(run).select_for_update().exists():
                raise _Superseded()
            revision = memory_services.changes_apply(
                filesystem=fs, changes=result.draft.changes, author_kind=memory_services.AuthorKind.MEMORY_AGENT,
                message=message[:500], source_kind="hydration_run", source_id=str(run.pk),
                counter=result.draft.counter,  # the agent's draft counted these files: not again
                words_of=words_of, words_from=words_from,
            )
            _mark_processed(run, outcome)
            # A citation must name an item of this file system: the run's own items are; any
            # other id the agent cited (an older item, or a stray number) is looked up.
            cited = {i for ids in result.draft.sources.values() for i in ids}
            valid = cited & items.keys()
            if cited - valid:
                valid |= set(Item.objects.filter(filesystem=fs, pk__in=cited - valid).values_list("pk", flat=True))
            _store_file_sources(run, [(path, i) for path, ids in result.draft.sources.items()
                                      for i in sorted(ids) if i in valid])
            # The message is read back from the revision's own rows: it names what was written.
            written = describe_changes(revision.changes.values_list("op", "path", "old_path"))
            return _finished(run, Status.SUCCEEDED, revision=revision, violations=[],
                           agent_message=_outcome_message(written, outcome))
    except _Superseded:
        run.refresh_from_db()
        return run
    except memory_services.VerificationFailed as exc:
        return _needs_attention(run, [v.as_dict() for v in exc.violations], list(outcome.processed)
                                + list(outcome.kept) + list(outcome.dropped))
    except memory_services.NothingChanged:
        return _settle(run, outcome, Status.NO_CHANGES, agent_message=_outcome_message("No file changed", outcome))
    except memory_services.InvalidChange as exc:
        return _finish(run, Status.FAILED, error=exc.message)
    except memory_services.MemoryWriteError as exc:
        return _finish(run, Status.FAILED, error=f"{exc.message} The next run starts from the new files.")


def _store_file_sources(run: Run, cited: list[tuple[str, int]]) -> None:
    """Which items fed which file, (path, item id) pairs, in one statement (no instance per row)."""
    if bulk.supported():
        bulk.rows_insert(FileSource, {"run": [run.pk] * len(cited), "path": [path for path, _ in cited],
                                      "item": [item_id for _, item_id in cited]}, ignore_conflicts=True)
        return
    FileSource.objects.bulk_create([FileSource(run=run, path=path, item_id=i) for path, i in cited],
                                   ignore_conflicts=True)


class _Superseded(Exception):
    pass

