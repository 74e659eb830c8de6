"""Memory: one file system per team and one per user, curated in the browser.

Public surface — what other apps (hydration, the memory agent, the learner, the agent loop, the
validator) may import; everything else in this package, and every name with a leading
underscore, is private (tests/hydration/test_memory_surface.py holds hydration to it):

- `memory.draft` — the one draft every writer edits: `MemoryDraft.load(fs, counter=TokenCounter(user))`,
  `draft.apply(Change(op, path, content=, new_path=, base_version=))`, `draft.move(...)` /
  `draft.delete(...)` with the link fixes of index.md and master.md, `draft.violations()`
  (the verifier's verdict; each written text counted once by the draft's `TokenCounter`),
  `draft.changes`; the errors (`MemoryWriteError`, `InvalidChange`, `AlreadyExists`,
  `NothingChanged`, `FileNotFound`, `StaleVersion`, `VerificationFailed`) and `check_content`.
- `memory.services` — every write. `changes_apply(filesystem=, changes=, author_kind=, author=,
  message=, source_kind=, source_id=, counter=)` is the one write path: the batch replayed on a
  `MemoryDraft` of the locked file system and written as ONE revision, verified first, refused with
  `VerificationFailed.violations`, or `NothingChanged` when it would change nothing. Pass the
  draft's `counter` so its token counts are reused. Also `filesystem_for_team(team)` /
  `filesystem_for_user(user)`, the single-file operations, and the errors re-exported.
- `memory.selectors` — reads (`files_content(fs)`, `status(fs)`...); `memory.models` — the rows.
- `memory.paths` — what a path is (`INDEX`, `MASTER`, `clean_path`); `memory.diffs` — diffs of
  memory text for pages; `memory.context.context_for(user)` — what the assistant has in context.
- `memory.blame` — who wrote each line: `blame_file(fs, file)` -> lines with `author_kind`
  ("user" only for the owner's own words, "others", "team"), `author_label` and revision.
- `memory.permissions` — who may read and edit which memory (`visible_filesystems`,
  `can_edit_filesystem`), the rules hydration's own are built from.

`memory.verifier` (the pure rules), `memory.links` (link edits) and `memory.rendering` are this
app's internals: reach them through `MemoryDraft`.
"""

PUBLIC_MODULES = (
    "memory.blame",
    "memory.context",
    "memory.diffs",
    "memory.draft",
    "memory.permissions",
    "memory.models",
    "memory.paths",
    "memory.selectors",
    "memory.services",
)
