"""Memory: one file system per team and one per user, curated in the browser.

For other apps (hydration, the memory agent, the learner, the agent loop, the validator):
- `memory.services.changes_apply(filesystem=, changes=[Change(op, path, content=, new_path=,
  base_version=)], author_kind=, author=, message=, source_kind=, source_id=)` — the one write
  path: a batch as ONE revision, verified first, refused with `VerificationFailed.violations`.
- `memory.services.filesystem_for_team(team)` / `filesystem_for_user(user)`.
- `memory.selectors.files_content(fs)` and `memory.services.draft_verify(filesystem=, files=)`
  to check a whole draft; `memory.verifier.verify(files, budgets, tokens=, count=)` is the pure
  verifier itself.
- `memory.context.context_for(user)` — what the assistant has in context.
"""
