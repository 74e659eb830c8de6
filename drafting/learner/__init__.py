"""The learner (issue 15 parts 3, 5, 6, 7, 9): keeps the user's context document (drafting.md)
up to date from what the user really sends, accepting an edit only when replayed drafts with it
beat replayed drafts without it under a judge and a sign test (drafting.learner.stats)."""
