"""A memory's settings and its transfer: the token budgets, export as a zip and import from one
(memory/views.py holds the browsing and editing pages)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render

from . import portable, selectors, services
from .views import AUTHOR, _base, _editable, _fs, _int


@login_required
def settings_view(request, fs_id):
    fs = _fs(request, fs_id)
    context = _base(request, fs)
    if request.method == "POST":
        if not context["can_edit"]:
            raise PermissionDenied("You may read this memory but not change it.")
        file_tokens, loaded = _int(request.POST.get("file_token_budget")), _int(request.POST.get("always_loaded_token_budget"))
        try:
            if file_tokens is None or loaded is None:
                raise services.InvalidChange("Budgets must be whole numbers of tokens.")
            services.budgets_update(filesystem=fs, file_tokens=file_tokens, always_loaded_tokens=loaded)
        except services.MemoryWriteError as exc:
            context["error"] = exc
            return render(request, "memory/settings.html", context, status=exc.status)
        messages.success(request, "Budgets saved.")
        return redirect("memory:settings", fs.pk)
    return render(request, "memory/settings.html", context)


@login_required
def export_zip(request, fs_id):
    """The file system as a zip of its markdown files and a manifest of its revisions."""
    fs = _fs(request, fs_id)
    response = HttpResponse(selectors.filesystem_export(fs), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{portable.export_name(fs)}"'
    return response


@login_required
def import_zip(request, fs_id):
    """Replace the file system with a zip's markdown files, as one revision through the verifier."""
    fs = _editable(request, fs_id)
    context = _base(request, fs)
    if request.method == "POST":
        upload = request.FILES.get("archive")
        try:
            if upload is None:
                raise portable.ArchiveRefused("Choose a zip file to import.")
            files = portable.archive_read(upload, size=upload.size)
            revision = services.filesystem_import(filesystem=fs, files=files, author_kind=AUTHOR,
                                                  author=request.user, source_id=(upload.name or "")[:100])
        except services.MemoryWriteError as exc:
            context["error"] = exc
            return render(request, "memory/import.html", context, status=exc.status)
        messages.success(request, f"Imported {len(files)} files as revision {revision.pk}.")
        return redirect("memory:revision", fs.pk, revision.pk)
    return render(request, "memory/import.html", context)
