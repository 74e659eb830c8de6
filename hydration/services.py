"""Hydration runs: every write of this app.

    run, created = run_trigger(filesystem=fs, trigger="manual", user=request.user)
    run_execute(run_id=run.pk)         # in a Celery worker, or synchronously

A run fetches every enabled source (storing items before anything else), summarizes every
item no revision has taken in yet, lets the memory agent work on a draft, and writes ONE
revision when the verifier passes it. The database refuses a second live run for a file
system; a run whose worker died loses its lease and the next trigger takes over from the
stored items.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
from datetime import timedelta
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Case, CharField, Exists, F, Model, OuterRef, PositiveSmallIntegerField, Q, Value, When
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery
from django.utils import timezone

from lindy import audit, failures, queue
from memory import services as memory_services
from memory.models import FileSystem
from router import budgets

from . import accounting, agent, events, gmail, provenance, summarizer
from .models import Fact, FileSource, GmailAccount, GmailOAuthState, Item, Run, Schedule, SourceState
from .sources import SOURCES, NotConnected, sources_for

logger = logging.getLogger(__name__)
Status = Run.Status


# --- Sources ----------------------------------------------------------------------------------

def source_states_ensure(*, filesystem: FileSystem) -> list[SourceState]:
    """The file system's sources, one stored row each (created here, in a write path, for a
    source seen for the first time). Pages read selectors.source_states, which never writes."""
    existing = {s.source: s for s in SourceState.objects.filter(filesystem=filesystem)}
    states = []
    for source in sources_for(filesystem):
        state = existing.get(source.kind)
        if state is None:
            state, _ = SourceState.objects.get_or_create(filesystem=filesystem, source=source.kind)
        states.append(state)
    return states


def source_set_enabled(*, filesystem: FileSystem, source: str, enabled: bool, actor=None) -> SourceState:
    if source not in SOURCES or not SOURCES[source].applies_to(filesystem):
        raise ValueError(f"{source!r} is not a source of this memory.")
    state, _ = SourceState.objects.get_or_create(filesystem=filesystem, source=source)
    if state.enabled != enabled:
        with transaction.atomic():
            state.enabled = enabled
            state.save(update_fields=["enabled"])
            # A team memory's sources are its admins' to read; a person's own, superusers'.
            audit.record(actor=actor, action="source.enabled_set", obj=state, label=f"{source} for {filesystem}",
                         team=filesystem.team_id, before={"enabled": not enabled}, after={"enabled": enabled})
    return state


def items_store(*, filesystem: FileSystem, source: str, items, run: Run | None) -> int:
    """Store items; an item already stored (same file system, source and external id) is
    left as it is. Returns how many were new."""
    rows: list[Model] = [
        Item(filesystem=filesystem, source=source, external_id=i.external_id[:255], author=i.author[:255],
             author_kind=i.author_kind, author_name=i.author_name[:255], title=i.title[:300], reference=i.reference[:1000], text=i.text, occurred_at=i.occurred_at,
             fetched_by=run)
        for i in items
    ]
    return sum(_insert_new(rows[start:start + ITEM_BATCH]) for start in range(0, len(rows), ITEM_BATCH))


ITEM_BATCH = 500
_ITEM_FIELDS = [f for f in Item._meta.concrete_fields if not f.primary_key]


def _insert_new(rows: list[Model]) -> int:
    """bulk_create(ignore_conflicts=True) as one statement that also says how many rows were new:
    the database's row count of INSERT ... ON CONFLICT DO NOTHING, which bulk_create does not
    hand back (counting the items before and after cost two more statements per source)."""
    if not rows:
        return 0
    query = InsertQuery(Item, on_conflict=OnConflict.IGNORE)
    query.insert_values(_ITEM_FIELDS, rows)
    new = 0
    with connection.cursor() as cursor:
        for sql, params in query.get_compiler(connection=connection).as_sql():
            cursor.execute(sql, params)
            new += cursor.rowcount
    return new


_STATE_FIELDS = ["status", "last_error", "last_error_at", "cursor", "last_success_at"]


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


# --- Gmail connection --------------------------------------------------------------------------

def gmail_connect_start(*, user, redirect_uri: str, purpose: str = "read") -> str:
    """Store a one-time OAuth state for `user` and return Google's consent URL for it, asking
    only for the scopes `purpose` needs (gmail.PURPOSES). Raises gmail.GmailError for an
    unknown purpose (nothing stored)."""
    scopes = gmail.scopes_for(purpose)
    state = GmailOAuthState.objects.create(state=gmail.new_state(), user=user, purpose=purpose)
    return gmail.authorize_url(state=state.state, redirect_uri=redirect_uri, scopes=scopes)


def gmail_account_connect(*, user, state: str, code: str, redirect_uri: str) -> GmailAccount:
    """Consume the OAuth state, exchange the code, and store the tokens for `user`.
    Raises gmail.GmailError (nothing stored) for a missing, forged, used or expired state."""
    if not state or not code:
        raise gmail.GmailError("The Gmail authorization came back without a code.")
    with transaction.atomic():
        row = GmailOAuthState.objects.select_for_update().filter(state=state, user=user, consumed_at=None).first()
        if row is None or row.created_at < timezone.now() - gmail.STATE_MAX_AGE:
            raise gmail.GmailError("This Gmail authorization link expired or was already used. Start again.")
        row.consumed_at = timezone.now()
        row.save(update_fields=["consumed_at"])
        purpose = row.purpose
    tokens = gmail.exchange_code(code=code, redirect_uri=redirect_uri)
    email = gmail.profile_email(tokens["access_token"])
    account, _ = GmailAccount.objects.get_or_create(user=user)
    account.email = email
    account.access_token = tokens["access_token"]
    account.refresh_token = tokens.get("refresh_token") or account.refresh_token
    account.token_expires_at = timezone.now() + timedelta(seconds=int(tokens.get("expires_in", 3600)))
    # With include_granted_scopes the answer lists every scope granted so far, not only the new ones.
    account.scopes = tokens.get("scope", "") or account.scopes
    # Acting is on only when the user asked for it now and Google granted it (the consent
    # screen lets a user untick a scope); a read-only reconnect leaves the switches as they were.
    # A switch stays on only while Google still grants its scopes (a revoked grant loses them).
    if purpose == "gmail_actions" or not gmail.has_scopes(account, gmail.GMAIL_ACT_SCOPES):
        account.act_in_gmail = gmail.has_scopes(account, gmail.GMAIL_ACT_SCOPES)
    if purpose == "calendar_actions" or not gmail.has_scopes(account, gmail.CALENDAR_SCOPES):
        account.act_in_calendar = gmail.has_scopes(account, gmail.CALENDAR_SCOPES)
    before = audit.snapshot(account, GOOGLE_AUDITED) if account.pk else None
    account.status = GmailAccount.Status.CONNECTED
    account.status_detail = ""
    with transaction.atomic():
        account.save()
        audit.record(actor=user, action="google_account.connected", obj=account, label=email, before=before,
                     after=audit.snapshot(account, GOOGLE_AUDITED))
    return account


def gmail_actions_turn_off(*, user, purpose: str) -> int:
    """The user no longer lets the assistant act in Gmail (or their calendar). The grant stays
    (reading for memory uses it); the assistant's actions go back to recorded-only."""
    field = {"gmail_actions": "act_in_gmail", "calendar_actions": "act_in_calendar"}.get(purpose)
    if field is None:
        raise gmail.GmailError(f"Unknown Google permission {purpose!r}.")
    with transaction.atomic():
        _google_audit(user, "google_account.actions_off", {field: False})
        return GmailAccount.objects.filter(user=user).update(**{field: False})


def gmail_account_disconnect(*, user) -> int:
    """Delete the user's Gmail tokens; the account stays, marked disconnected."""
    with transaction.atomic():
        _google_audit(user, "google_account.disconnected", {"status": GmailAccount.Status.DISCONNECTED.value})
        return GmailAccount.objects.filter(user=user).update(
            access_token="", refresh_token="", token_expires_at=None, status=GmailAccount.Status.DISCONNECTED,
            status_detail="Disconnected by the user.",
        )


# What the audit log keeps of a Google connection: what the assistant may read and do, never tokens.
GOOGLE_AUDITED = ("email", "status", "scopes", "act_in_gmail", "act_in_calendar")


def _google_audit(user, action: str, change: dict) -> None:
    account = GmailAccount.objects.filter(user=user).first()
    if account is None:
        return
    before = audit.snapshot(account, GOOGLE_AUDITED)
    after = {**before, **change}
    if before != after:
        audit.record(actor=user, action=action, obj=account, label=account.email, before=before, after=after)


# --- Runs -------------------------------------------------------------------------------------

def _lease() -> timedelta:
    return timedelta(seconds=settings.HYDRATION_RUN_LEASE_SECONDS)


def runs_expire(*, filesystem: FileSystem | None = None) -> int:
    """Mark live runs whose worker stopped renewing their lease as interrupted."""
    now = timezone.now()
    stale = Run.objects.filter(status__in=Run.ACTIVE, lease_until__lt=now)
    if filesystem is not None:
        stale = stale.filter(filesystem=filesystem)
    return stale.update(status=Status.INTERRUPTED, finished_at=now,
                        error="The worker stopped before finishing; the next run picks up its stored items.")


def run_trigger(*, filesystem: FileSystem, trigger: str, user=None, enqueue: bool = True) -> tuple[Run, bool]:
    """A new queued run, or the live one when there is one already (created=False)."""
    runs_expire(filesystem=filesystem)
    for attempt in range(3):
        try:
            with transaction.atomic():
                run = Run.objects.create(filesystem=filesystem, trigger=trigger, triggered_by=user,
                                         status=Status.QUEUED, stage="Waiting for a worker",
                                         lease_until=timezone.now() + _lease())
            break
        except IntegrityError:
            active = Run.objects.filter(filesystem=filesystem, status__in=Run.ACTIVE).first()
            if active is not None:
                return active, False
            if attempt == 2:  # the live run kept finishing in between: give up loudly
                raise
    if enqueue:
        transaction.on_commit(lambda: _enqueue(run))
    return run, True


HYDRATE_TASK = "hydration.tasks.hydrate"
# Also said of a run given back to wait for budget, which had started: its stored items are kept.
ENQUEUE_FAILED_MESSAGE = ("The task queue could not be reached, so this run is not running. Press Run now to try "
                          "again; the scheduler also re-queues it within minutes once the queue is back.")


def _enqueue(run: Run) -> None:
    """Queue the run, or mark it "could not be queued" (not live): a run the broker never got must
    not hold the file system's one live slot, or every later click says "already in progress"."""
    if not run_enqueue(run_id=run.pk):
        run.refresh_from_db(fields=["status", "stage", "finished_at", "error"])


def run_enqueue(*, run_id: int, countdown: float | None = None) -> bool:
    """Every path that hands a queued run to the broker (Run now, the dispatch tick, the retry sweep,
    a run given back to wait for budget) goes through here, so a refusal is never only logged: the
    run is marked ENQUEUE_FAILED at once and runs_enqueue_retry queues it again. Returns whether
    the broker took it."""
    if queue.enqueue_or_log(HYDRATE_TASK, run_id, countdown=countdown):
        return True
    run_mark_enqueue_failed(run_id=run_id)
    return False


def run_mark_enqueue_failed(*, run_id: int) -> int:
    """A queued run the broker never got. Only a QUEUED row: one a worker claimed meanwhile (an
    eager task, a delivery that did arrive) is left as it is."""
    return Run.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.ENQUEUE_FAILED, stage="", finished_at=timezone.now(), error=ENQUEUE_FAILED_MESSAGE,
        lease_holder="", lease_task_id="")


def runs_enqueue_retry(*, limit: int = 500) -> list[int]:
    """Re-queue runs that could not be queued (the dispatch task calls this every few minutes): the
    latest run of a file system, triggered within one interval. Returns the runs queued again."""
    now = timezone.now()
    newer = Run.objects.filter(filesystem_id=OuterRef("filesystem_id"), pk__gt=OuterRef("pk"))
    failed = (Run.objects.filter(status=Status.ENQUEUE_FAILED,
                                 created_at__gte=now - timedelta(seconds=settings.HYDRATION_INTERVAL_SECONDS))
              .exclude(Exists(newer)).order_by("created_at")[:limit])
    requeued = []
    for run in failed:
        try:
            with transaction.atomic():
                revived = Run.objects.filter(pk=run.pk, status=Status.ENQUEUE_FAILED).update(
                    status=Status.QUEUED, stage="Waiting for a worker", finished_at=None, error="",
                    lease_until=now + _lease())
        except IntegrityError:  # a live run exists for the file system: it will take the items
            continue
        if revived:
            requeued.append(run.pk)
            transaction.on_commit(partial(_enqueue, run))
    return requeued


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def _dead_holder(now, task_id: str = "") -> Q:
    """A running run whose holder is gone: its lease passed, its heartbeat went quiet, or the
    delivery asking is the very task that held it (Celery redelivers a task whose worker died)."""
    stale = now - timedelta(seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS)
    dead = Q(lease_until__lt=now) | Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale)
    if task_id:
        dead |= Q(lease_task_id=task_id)
    return Q(status=Status.RUNNING) & dead


def _claim(run_id: int, task_id: str = "") -> Run | None:
    now = timezone.now()
    claimed = Run.objects.filter(
        Q(status=Status.QUEUED) | (_dead_holder(now, task_id) & Q(attempts__lt=settings.HYDRATION_RUN_MAX_ATTEMPTS)),
        pk=run_id,
    ).update(status=Status.RUNNING, attempts=F("attempts") + 1, lease_until=now + _lease(),
             started_at=now, stage="Starting", lease_holder=_holder(), lease_task_id=task_id[:255],
             heartbeat_at=now, requeued_at=None)
    if not claimed:
        return None
    return Run.objects.select_related("filesystem", "filesystem__team", "filesystem__owner").get(pk=run_id)


class _Heartbeat:
    """While the run executes, a thread keeps its row current: the heartbeat (and lease) every
    few seconds, even while the run waits minutes on one model call (a heartbeat that stops means
    the worker died, and the run may be taken over without waiting for the lease to pass), and the
    progress the run publishes (stage, usage) as soon as it changes. The run's own path spends no
    round trip on progress, and a burst of stage changes while the thread writes is one write.
    With the heartbeat off (HYDRATION_HEARTBEAT_SECONDS = 0) progress is written in place."""

    def __init__(self, run: Run):
        self.run = run
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pending: dict | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Heartbeat:
        interval = settings.HYDRATION_HEARTBEAT_SECONDS
        # Inside the caller's transaction (the demo's seed) the run's row is uncommitted: a thread
        # on its own connection can't see it (PostgreSQL) or waits on the caller's write lock
        # (SQLite). Progress is then written in place, on the caller's connection.
        if interval > 0 and not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._beat, args=(interval,), daemon=True,
                                            name=f"hydration-heartbeat-{self.run.pk}")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        # What is still pending is not written: the run's end (_finish) writes every field.
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)

    def publish(self, fields: dict) -> None:
        """Write these progress fields (with a fresh heartbeat and lease) soon: on the thread, or
        here when there is none."""
        if self._thread is None:
            self._write(fields)
            return
        self._pending = fields  # one reference swap: the thread takes the latest
        self._wake.set()

    def _write(self, fields: dict) -> None:
        run = self.run
        now = timezone.now()
        Run.objects.filter(pk=run.pk, attempts=run.attempts, status=Status.RUNNING).update(
            **fields, heartbeat_at=now, lease_until=now + _lease())

    def _beat(self, interval: float) -> None:
        try:
            while True:
                self._wake.wait(interval)
                if self._stop.is_set():
                    return
                self._wake.clear()
                fields, self._pending = self._pending, None
                try:
                    self._write(fields or {})
                except DatabaseError:  # a missed beat is no failure; the next one may get through
                    logger.warning("hydration run %s: heartbeat failed", self.run.pk, exc_info=True)
        finally:
            connection.close()  # the thread's own connection


class _Progress:
    """Keeps the run's stage and usage up to date as it goes (written by the heartbeat)."""

    def __init__(self, run: Run, heartbeat: _Heartbeat):
        self.run = run
        self.heartbeat = heartbeat

    def stage(self, text: str) -> None:
        run = self.run
        run.stage = text[:200]
        run.lease_until = timezone.now() + _lease()
        # A snapshot: the thread writes these values, whatever the run does meanwhile.
        self.heartbeat.publish({
            "stage": run.stage, "sources": dict(run.sources), "model_calls": run.model_calls,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens, "cost": run.cost,
        })

    def call(self, completion) -> None:
        run = self.run
        run.model_calls += 1
        run.input_tokens += completion.usage.input_tokens + completion.usage.cache_read_tokens
        run.output_tokens += completion.usage.output_tokens
        run.cost = Decimal(run.cost) + Decimal(completion.cost or 0)


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


def _finish(run: Run, status: Status, **fields) -> Run:
    # A worker whose run was taken over (lease expired, another attempt claimed it) writes nothing.
    if not Run.objects.filter(pk=run.pk, attempts=run.attempts, status=Status.RUNNING).exists():
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
        if not Run.objects.select_for_update().filter(pk=run.pk, attempts=run.attempts,
                                                      status=Status.RUNNING).exists():
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
    if done:
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


def run_execute(*, run_id: int, task_id: str = "") -> Run | None:
    """Do the run if it is still to be done: queued, or running for a holder that is dead (see
    _dead_holder). A duplicate delivery while the holder lives does nothing. `task_id` is the
    Celery task id of this delivery, recorded in the lease."""
    run = _claim(run_id, task_id)
    if run is None:
        return None
    with _Heartbeat(run) as heartbeat:
        progress = _Progress(run, heartbeat)
        try:
            with budgets.background():
                return _pipeline(run, progress)
        except budgets.BudgetExhausted:
            _wait_for_budget(run)
            raise  # the task queues the run again after the budget's countdown
        except Exception as exc:
            logger.exception("hydration run %s failed", run.pk)
            failures.capture(exc, kind="hydration_run", route="hydration", **_failure_context(run),
                             log=_failure_log(run))
            return _finish(run, Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])


def _wait_for_budget(run: Run) -> None:
    """The provider's budget is used up: give the run back to the queue (its items are stored;
    the next attempt starts from them) rather than failing it."""
    Run.objects.filter(pk=run.pk, status=Status.RUNNING).update(
        status=Status.QUEUED, stage="Waiting for the model provider's budget", lease_until=timezone.now() + _lease(),
        lease_holder="", lease_task_id="")


def runs_recover(*, now=None, limit: int = 500) -> list[int]:
    """The recovery sweep (beat, every HYDRATION_RECOVER_EVERY_SECONDS): queue again each running
    run whose heartbeat went quiet, since a worker killed whole leaves its message unacknowledged
    until the broker's visibility timeout (1 h). Idempotent: a run is queued once per stale window
    (`requeued_at`), and a delivery that finds the run taken over does nothing (the lease decides).
    A run whose workers died HYDRATION_RUN_MAX_ATTEMPTS times is given up, its items kept.
    Returns the runs queued."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS)
    dead = Run.objects.filter(_dead_holder(now))
    dead.filter(attempts__gte=settings.HYDRATION_RUN_MAX_ATTEMPTS).update(
        status=Status.INTERRUPTED, finished_at=now, stage="Interrupted",
        error=f"Its worker died in each of {settings.HYDRATION_RUN_MAX_ATTEMPTS} attempts; the next run picks up "
              "its stored items.")
    due = dead.filter(Q(requeued_at__isnull=True) | Q(requeued_at__lt=stale),
                      attempts__lt=settings.HYDRATION_RUN_MAX_ATTEMPTS)
    queued = []
    for run_id in due.order_by("pk").values_list("pk", flat=True)[:limit]:
        # Mark first, so two sweeps never both queue it; unmark when the broker refuses.
        if not due.filter(pk=run_id).update(requeued_at=now):
            continue
        try:
            queue.enqueue(HYDRATE_TASK, run_id)
        except Exception:
            logger.exception("hydration run %s: could not queue it again; the next sweep will", run_id)
            Run.objects.filter(pk=run_id, requeued_at=now).update(requeued_at=None)
            continue
        queued.append(run_id)
    return queued


def _pipeline(run: Run, progress: _Progress) -> Run:
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
            current = Run.objects.select_for_update().get(pk=run.pk)
            if current.status != Status.RUNNING or current.attempts != run.attempts:
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
            FileSource.objects.bulk_create(
                [FileSource(run=run, path=path, item_id=i) for path, ids in result.draft.sources.items()
                 for i in sorted(ids) if i in valid],
                ignore_conflicts=True,
            )
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


class _Superseded(Exception):
    pass


def run_now_sync(*, filesystem: FileSystem, trigger: str = Run.Trigger.COMMAND, user=None) -> Run:
    """Trigger and execute in this process (manage.py hydrate, the demo)."""
    run, created = run_trigger(filesystem=filesystem, trigger=trigger, user=user, enqueue=False)
    if not created and run.status == Status.RUNNING:
        return run
    done = run_execute(run_id=run.pk)
    return done or Run.objects.get(pk=run.pk)


# --- Schedule ---------------------------------------------------------------------------------

def _slot(fs_id: int, interval: int) -> int:
    """A stable offset within the interval for one file system, spreading runs evenly."""
    digest = hashlib.sha256(f"hydration:{fs_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % interval


def _first_due(fs_id: int, now, interval: int):
    epoch = int(now.timestamp())
    start = epoch - epoch % interval + _slot(fs_id, interval)
    if start <= epoch:
        start += interval
    return now + timedelta(seconds=start - epoch)


def schedules_backfill(*, now=None) -> int:
    """Give every file system without a schedule its slot. New file systems get theirs when they
    are created (hydration.signals); this sweep catches bulk-created ones. It scans every file
    system, so it runs on its own slow beat entry, never on the dispatch tick."""
    now = now or timezone.now()
    interval = settings.HYDRATION_INTERVAL_SECONDS
    missing = FileSystem.objects.filter(hydration_schedule__isnull=True).values_list("pk", flat=True)
    made = Schedule.objects.bulk_create([Schedule(filesystem_id=pk, next_run_at=_first_due(pk, now, interval))
                                         for pk in missing], ignore_conflicts=True)
    return len(made)


def schedule_ensure(*, filesystem_id: int, now=None) -> None:
    now = now or timezone.now()
    Schedule.objects.get_or_create(filesystem_id=filesystem_id, defaults={
        "next_run_at": _first_due(filesystem_id, now, settings.HYDRATION_INTERVAL_SECONDS)})


def schedule_dispatch(*, now=None, batch: int | None = None, max_batches: int | None = None) -> list[int]:
    """Start the run of every file system whose slot came; returns the runs created.

    Each batch reads only due rows through the index on next_run_at (so a tick costs O(runs due),
    not O(file systems)), locks them with SKIP LOCKED so a second tick running at the same time
    takes other rows instead of the same ones, advances them all in one UPDATE and creates the
    runs in one INSERT."""
    now = now or timezone.now()
    batch = batch or settings.HYDRATION_DISPATCH_BATCH
    max_batches = max_batches or settings.HYDRATION_DISPATCH_MAX_BATCHES
    runs_expire()
    created: list[int] = []
    for _ in range(max_batches):
        started, claimed = _dispatch_batch(now, batch)
        created += started
        if claimed < batch:
            break
    return created


def _next_slot(due_at, now, step: timedelta):
    missed = (now - due_at) // step + 1  # a slot missed while beat was down is skipped, not replayed
    return due_at + missed * step


def _dispatch_batch(now, batch: int) -> tuple[list[int], int]:
    """Returns (runs created, schedule rows claimed)."""
    step = timedelta(seconds=settings.HYDRATION_INTERVAL_SECONDS)
    with transaction.atomic():
        due = list(Schedule.objects.filter(next_run_at__lte=now).order_by("next_run_at")
                   .select_for_update(skip_locked=True).only("pk", "filesystem_id", "next_run_at")[:batch])
        if not due:
            return [], 0
        for schedule in due:
            schedule.next_run_at = _next_slot(schedule.next_run_at, now, step)
        Schedule.objects.bulk_update(due, ["next_run_at"])
        fs_ids = [schedule.filesystem_id for schedule in due]
        busy = set(Run.objects.filter(filesystem_id__in=fs_ids, status__in=Run.ACTIVE)
                   .values_list("filesystem_id", flat=True))
        runs = _runs_create([pk for pk in fs_ids if pk not in busy], now)
        run_ids = [run.pk for run in runs]
        transaction.on_commit(lambda: _enqueue_runs(run_ids))
    return run_ids, len(due)


def _enqueue_runs(run_ids: list[int]) -> None:
    # One broker hiccup must not leave the rest of the batch unqueued; a run never delivered is
    # marked ENQUEUE_FAILED (not left QUEUED under its lease), and the retry sweep queues it again.
    for pk in run_ids:
        run_enqueue(run_id=pk)


def _runs_create(fs_ids: list[int], now) -> list[Run]:
    lease_until = now + _lease()
    try:
        with transaction.atomic():  # a savepoint: a clash rolls back only the INSERT
            return Run.objects.bulk_create([
                Run(filesystem_id=pk, trigger=Run.Trigger.SCHEDULE, status=Status.QUEUED,
                    stage="Waiting for a worker", lease_until=lease_until) for pk in fs_ids])
    except IntegrityError:
        # Someone pressed "Run now" on one of them in between: start the others one by one.
        runs = []
        for pk in fs_ids:
            try:
                with transaction.atomic():
                    runs.append(Run.objects.create(filesystem_id=pk, trigger=Run.Trigger.SCHEDULE,
                                                   status=Status.QUEUED, stage="Waiting for a worker",
                                                   lease_until=lease_until))
            except IntegrityError:
                continue
        return runs
