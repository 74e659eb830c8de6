"""Memory pages added for issue 35 part 6 (memory/views.py holds the rest): reverting one file's
change from its history page.

A whole revision is reverted from its revision page (views.revision_revert); a file's history
page reverts that file's change only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from . import selectors, services
from .models import FileChange
from .views import AUTHOR, _editable, _refused


@login_required
@require_POST
def change_revert(request, fs_id, change_id):
    """Undo this file's change in its revision, and nothing else of that revision."""
    fs = _editable(request, fs_id)
    change = selectors.change_get(fs, change_id)
    try:
        revision = services.change_revert(filesystem=fs, change=change, author_kind=AUTHOR, author=request.user)
    except services.MemoryWriteError as exc:
        _refused(request, exc)
        return redirect("memory:file-history", fs.pk, change.path)
    if change.op == FileChange.Op.MOVE:
        where, done = change.old_path, f"Moved {change.path} back to {change.old_path}"
    elif change.op == FileChange.Op.CREATE:
        where, done = "", f"Removed {change.path} (and its index line), undoing its creation"
    else:
        where, done = change.path, f"Reverted {change.path} to its text before revision {change.revision_id}"
    messages.success(request, f"{done}, as revision {revision.pk}. The other files of revision "
                              f"{change.revision_id} are unchanged.")
    if not where:
        return redirect("memory:tree", fs.pk)
    return redirect("memory:file-history", fs.pk, where)
