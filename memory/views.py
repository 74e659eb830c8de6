"""Memory pages: browse, read, edit, move, delete, history, diffs and reverts.

Every page works without JavaScript; htmx only swaps partials (the tree listing, the
preview, paginated history). Reads need a visible file system (others' are 404); writes
need `permissions.can_edit_filesystem` (403 otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import RFC3986_SUBDELIMS, url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from lindy.counting import CappedPaginator, CountedPaginator, page_number
from lindy.middleware import accepts_large_form

from . import blame, diff_html, diffs, permissions, portable, selectors, services
from .context import context_for
from .models import VIA_BROWSER, FileChange
from .paths import SPECIAL, PathError, clean_path, folder_of, name_of
from .rendering import render_file, render_markdown
from .shared_budget import shared_budget, special_tokens_note

TREE_PAGE_SIZE = 50
HISTORY_PAGE_SIZE = 10  # each change shows its diff: ten keep the page light on a phone
# Search results are counted at most this far past the page shown ("Page 2 of 12+").
SEARCH_COUNT_AHEAD = 500
AUTHOR = services.AuthorKind.PERSON


def _memory_user(request):
    if not permissions.can_use_memory(request.user):
        raise Http404("Memory belongs to team members.")


def _fs(request, fs_id):
    _memory_user(request)
    return selectors.filesystem_get(request.user, fs_id)


def _editable(request, fs_id):
    fs = _fs(request, fs_id)
    if not permissions.can_edit_filesystem(request.user, fs):
        raise PermissionDenied("You may read this memory but not change it.")
    return fs


def _page(request, queryset, size, count: int):
    """A page of `queryset`, whose length (`count`) the caller knows: no COUNT query."""
    return CountedPaginator(queryset, size, count).get_page(request.GET.get("page"))


def _base(request, fs) -> dict:
    return _base_with(request, fs)[0]


def _base_with(request, fs, *facts: selectors.CachedFact) -> tuple[dict, list]:
    """What every memory page shows (the verdict), and the values of the page's own `facts`,
    read from the cache in one round trip."""
    violations, *values = selectors.facts(fs, selectors.VERDICT, *facts)
    return {"fs": fs, "can_edit": permissions.can_edit_filesystem(request.user, fs), "violations": violations}, values


def _bar(tokens: int, budget: int) -> int:
    return min(100, round(100 * tokens / budget)) if budget else 100


_ESTIMATED = ' <abbr title="Conservative estimate (1 token per 3 bytes): no model counter configured">est.</abbr>'


def _budget_bar(item) -> str:
    """A file's token bar. Built here rather than by an {% include %} per row: on a listing of
    50 files the include cost more than the rest of the page. Only integers are interpolated,
    so nothing needs escaping."""
    tokens, budget, percent = int(item.tokens), int(item.budget), int(item.percent)
    return mark_safe(  # noqa: S308 (integers and constants only)
        f'<span class="budget" title="{tokens:,} of {budget:,} tokens{"" if item.tokens_exact else " (estimated)"}">\n'
        f'  <span class="bar{" over" if item.over else ""}"><span style="width: {percent}%"></span></span>\n'
        f"  <small>{tokens:,} / {budget:,} tokens{'' if item.tokens_exact else _ESTIMATED}</small>\n</span>"
    )


# What reverse() leaves unescaped in a URL's path (the RFC 3986 `pchar`s).
_PCHAR_SAFE = RFC3986_SUBDELIMS + "/~:@"
_SENTINEL = 987654321


def _path_urls(name: str, fs) -> Callable[[str], str]:
    """reverse(name, args=[fs.pk, path]) for many paths: the URL up to the path is reversed once
    and each path quoted as reverse() quotes it (a reverse per row cost more than the row)."""
    prefix = reverse(name, args=[fs.pk, "x.md"]).removesuffix("x.md")
    return lambda path: prefix + quote(path, safe=_PCHAR_SAFE)


def _id_urls(name: str, fs) -> Callable[[int], str]:
    """reverse(name, args=[fs.pk, n]) for many ids, reversed once."""
    head, tail = reverse(name, args=[fs.pk, _SENTINEL]).split(str(_SENTINEL))
    return lambda n: f"{head}{n}{tail}"


def _decorate(fs, files):
    """Set what a listing row shows on each file."""
    file_url = _path_urls("memory:file", fs)
    for item in files:
        item.url = file_url(item.path)
        budget = fs.always_loaded_token_budget if item.path in SPECIAL else fs.file_token_budget
        item.budget = budget
        item.percent = _bar(item.tokens, budget)
        item.over = item.tokens > budget
        item.name = name_of(item.path)
        item.bar = special_tokens_note(item) if item.path in SPECIAL else _budget_bar(item)
    return files


@login_required
def home(request):
    _memory_user(request)
    rows = []
    for fs in selectors.filesystems_for(request.user):
        violations = selectors.status(fs)
        rows.append({"fs": fs, "violations": violations, "totals": selectors.totals(fs),
                     "can_edit": permissions.can_edit_filesystem(request.user, fs)})
    return render(request, "memory/home.html", {"rows": rows})


@login_required
def context_view(request):
    _memory_user(request)
    return render(request, "memory/context.html", {"context": context_for(request.user)})


@login_required
def tree(request, fs_id):
    fs = _fs(request, fs_id)
    query = request.GET.get("q", "").strip()[:200]
    folder = request.GET.get("dir", "")
    if folder:
        try:
            folder = folder_of(clean_path(folder.rstrip("/") + "/x.md"))
        except PathError:
            raise Http404("No such folder.") from None
    if query:
        asked = page_number(request.GET.get("page"))
        paginator = CappedPaginator(selectors.search(fs, query), TREE_PAGE_SIZE, asked, ahead=SEARCH_COUNT_AHEAD)
        context, (paginator.count, totals) = _base_with(request, fs, selectors.search_count_fact(query, paginator.cap),
                                                         selectors.TOTALS)
        page = paginator.get_page(asked)
        folders = []
    else:
        context, (count, folders, totals) = _base_with(request, fs, selectors.files_in_count_fact(folder),
                                                        selectors.subfolders_fact(folder), selectors.TOTALS)
        page = _page(request, selectors.files_in(fs, folder), TREE_PAGE_SIZE, count)
    _decorate(fs, page.object_list)
    crumbs = []
    if folder:
        parts = folder.rstrip("/").split("/")
        crumbs = [{"name": part, "dir": "/".join(parts[: i + 1]) + "/"} for i, part in enumerate(parts)]
    context.update({
        "pinned": (pinned := _decorate(fs, selectors.pinned(fs)) if not folder and not query else []),
        "shared": shared_budget(fs, pinned) if pinned else None,
        "page": page, "folders": folders, "folder": folder, "query": query, "crumbs": crumbs, "totals": totals,
    })
    template = "memory/tree.html#listing" if request.htmx else "memory/tree.html"
    return render(request, template, context)


@login_required
def file_view(request, fs_id, path):
    fs = _fs(request, fs_id)
    item = selectors.file_get(fs, path)
    context = _base(request, fs)
    who = request.GET.get("view") == "who"
    context.update({"file": _decorate(fs, [item])[0], "special": item.path in SPECIAL, "who": who,
                    "shared": shared_budget(fs) if item.path in SPECIAL else None})
    if who:
        # "Who wrote this": each line with its author kind, linked to its revision and run.
        lines = blame.blame_file(fs, item)
        context.update({"lines": lines, "own_lines": sum(1 for line in lines if line.author_kind == blame.USER)})
    else:
        context["html"] = render_file(item.content, fs_id=fs.pk)
    return render(request, "memory/file.html", context)


def _refused(request, exc: services.MemoryWriteError) -> None:
    messages.error(request, exc.message)


def _too_large(content: str) -> services.InvalidChange | None:
    """The refusal of a text no memory file can hold, checked before anything counts or renders it."""
    size = len(content.encode("utf-8"))
    if size <= services.MAX_FILE_BYTES:
        return None
    return services.InvalidChange(
        f"The text is {size:,} bytes; a memory file holds at most {services.MAX_FILE_BYTES:,}. Nothing was saved "
        "and your text is still below: split it into several files, each linked from the index.")


def _preview_context(request, fs, *, path: str, content: str, add_to_index: bool = False) -> dict:
    """The preview: the rendered text, its token count against its budget and the verifier's
    verdict if it were saved now (memory.selectors.edit_check)."""
    check = selectors.edit_check(fs, path=path, content=content, user=request.user, add_to_index=add_to_index)
    rendered = "" if check.tokens is None else render_markdown(content, fs_id=fs.pk)
    return {"preview": rendered, "check": check}


@login_required
@accepts_large_form
def preview(request, fs_id):
    fs = _fs(request, fs_id)
    if request.method != "POST":
        return render(request, "memory/edit.html#preview", {"fs": fs, "preview": ""})
    context = {"fs": fs, **_preview_context(request, fs, path=request.POST.get("path", "").strip(),
                                            content=request.POST.get("content", "").replace("\r\n", "\n"),
                                            add_to_index=request.POST.get("add_to_index") == "on")}
    return render(request, "memory/edit.html#preview", context)


def _conflict(fs, item, mine: str) -> dict:
    """Their version (the live file) against mine, who saved it and when."""
    theirs = selectors.file_get(fs, item.path)
    return {"theirs": theirs, "change": selectors.last_change(fs, item.path),
            "diff": diffs.unified(theirs.content, mine), "identical": theirs.content == mine}


@login_required
@accepts_large_form
def file_edit(request, fs_id, path):
    fs = _editable(request, fs_id)
    item = selectors.file_get(fs, path)
    context = _base(request, fs)
    context.update({"file": item, "content": item.content, "base_version": item.version, "message": ""})
    if request.method == "POST":
        content = request.POST.get("content", "").replace("\r\n", "\n")
        base_version = _int(request.POST.get("base_version"))
        context.update({"content": content, "base_version": base_version, "message": request.POST.get("message", "")})
        too_large = _too_large(content)
        if too_large is not None:
            context.update({"error": too_large, **_preview_context(request, fs, path=item.path, content=content)})
            return render(request, "memory/edit.html", context, status=too_large.status)
        if "preview" in request.POST:
            context.update(_preview_context(request, fs, path=item.path, content=content))
            return render(request, "memory/edit.html", context, status=200)
        try:
            services.file_write(filesystem=fs, path=item.path, content=content, base_version=base_version,
                                author_kind=AUTHOR, author=request.user, message=context["message"],
                                source_kind=VIA_BROWSER)
        except services.StaleVersion as exc:
            # Someone saved the file since this form was opened: show their version against this
            # one; "keep mine" saves over it, knowingly, and "take theirs" reopens the live file.
            conflict = _conflict(fs, item, content)
            context.update({"error": exc, "conflict": conflict, "base_version": conflict["theirs"].version,
                            **_preview_context(request, fs, path=item.path, content=content)})
            return render(request, "memory/edit.html", context, status=exc.status)
        except services.MemoryWriteError as exc:
            context.update({"error": exc, **_preview_context(request, fs, path=item.path, content=content)})
            return render(request, "memory/edit.html", context, status=exc.status)
        messages.success(request, f"Saved {item.path}.")
        return redirect("memory:file", fs.pk, item.path)
    context.update(_preview_context(request, fs, path=item.path, content=item.content))
    return render(request, "memory/edit.html", context)


def _int(raw) -> int | None:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


@login_required
@accepts_large_form
def file_new(request, fs_id):
    fs = _editable(request, fs_id)
    context = _base(request, fs)
    folder = request.GET.get("dir", "")
    context.update({"new": True, "path": folder, "content": "", "add_to_index": True, "description": "",
                    "message": ""})
    if request.method == "POST":
        path = request.POST.get("path", "").strip()
        content = request.POST.get("content", "").replace("\r\n", "\n")
        add = request.POST.get("add_to_index") == "on"
        description = request.POST.get("description", "")
        context.update({"path": path, "content": content, "add_to_index": add, "description": description,
                        "message": request.POST.get("message", "")})
        too_large = _too_large(content)
        if too_large is not None:
            context.update({"error": too_large, **_preview_context(request, fs, path=path, content=content)})
            return render(request, "memory/edit.html", context, status=too_large.status)
        if "preview" in request.POST:
            context.update(_preview_context(request, fs, path=path, content=content, add_to_index=add))
            return render(request, "memory/edit.html", context)
        try:
            services.file_write(filesystem=fs, path=path, content=content, base_version=None, author_kind=AUTHOR,
                                author=request.user, message=context["message"] or f"Create {path}",
                                index_description=description if add else None, create_only=True,
                                source_kind=VIA_BROWSER)
        except services.MemoryWriteError as exc:
            context.update({"error": exc, **_preview_context(request, fs, path=path, content=content, add_to_index=add),
                            "index_hint": not add and any(v.kind == "unlinked" for v in getattr(exc, "violations", []))})
            return render(request, "memory/edit.html", context, status=exc.status)
        path = clean_path(path)
        messages.success(request, f"Created {path}" + (" and added it to the index." if add else "."))
        return redirect("memory:file", fs.pk, path)
    return render(request, "memory/edit.html", context)


@login_required
def file_move(request, fs_id, path):
    fs = _editable(request, fs_id)
    item = selectors.file_get(fs, path)
    context = _base(request, fs)
    context.update({"file": item, "new_path": item.path, "update_links": True})
    if request.method == "POST":
        new_path = request.POST.get("new_path", "").strip()
        update_links = request.POST.get("update_links") == "on"
        context.update({"new_path": new_path, "update_links": update_links})
        try:
            services.file_move(filesystem=fs, path=item.path, new_path=new_path,
                               base_version=_int(request.POST.get("base_version")), author_kind=AUTHOR,
                               author=request.user, update_links=update_links)
        except services.MemoryWriteError as exc:
            context["error"] = exc
            return render(request, "memory/move.html", context, status=exc.status)
        new_path = clean_path(new_path)
        messages.success(request, f"Moved {item.path} to {new_path}.")
        return redirect("memory:file", fs.pk, new_path)
    return render(request, "memory/move.html", context)


@login_required
def file_delete(request, fs_id, path):
    fs = _editable(request, fs_id)
    item = selectors.file_get(fs, path)
    context = _base(request, fs)
    context.update({"file": item, "update_links": True})
    if request.method == "POST":
        update_links = request.POST.get("update_links") == "on"
        try:
            services.file_delete(filesystem=fs, path=item.path, base_version=_int(request.POST.get("base_version")),
                                 author_kind=AUTHOR, author=request.user, update_links=update_links)
        except services.MemoryWriteError as exc:
            context.update({"error": exc, "update_links": update_links})
            return render(request, "memory/delete.html", context, status=exc.status)
        messages.success(request, f"Deleted {item.path}.")
        return redirect(reverse("memory:tree", args=[fs.pk]) + (f"?dir={item.folder}" if item.folder else ""))
    return render(request, "memory/delete.html", context)


@login_required
def file_history(request, fs_id, path):
    fs = _fs(request, fs_id)
    try:
        path = clean_path(path)
    except PathError:
        raise Http404("No such file.") from None
    context, (count,) = _base_with(request, fs, selectors.file_history_count_fact(path))
    changes = selectors.file_history(fs, path).defer("before", "after")  # only diffs missing from the cache read them
    page = _page(request, changes, HISTORY_PAGE_SIZE, count)
    if not page.object_list and page.number == 1:
        raise Http404(f"{path} has no history.")
    style = "split" if request.GET.get("view") == "split" else "unified"
    diff_html.attach(list(page.object_list), style)
    revision_url, revert_url = _id_urls("memory:revision", fs), _id_urls("memory:change-revert", fs)
    restore_url = _id_urls("memory:restore", fs)
    for change in page.object_list:  # a {% url %} tag (or a reverse) per link costs several times more
        change.revision_url = revision_url(change.revision_id)
        change.revert_url = revert_url(change.pk)  # this file's change only (history_views.change_revert)
        change.restore_url = restore_url(change.pk)
        change.header_html = _change_header(change, change.revision_url)
    context.update({"path": path, "page": page, "style": style, "history_url": reverse("memory:file-history", args=[fs.pk, path]),
                    "exists": _exists_after(fs, path, page)})
    template = "memory/history.html#changes" if request.htmx else "memory/history.html"
    return render(request, template, context)


def _change_header(change: FileChange, revision_url: str) -> SafeString:
    """What a history entry says about its change. Built here rather than in the template: its
    dozen lookups and a |date filter per entry were most of the page's cost (format_html escapes)."""
    revision = change.revision
    moved = (format_html(" from <code>{}</code> to <code>{}</code>", change.old_path, change.path)
             if change.op == FileChange.Op.MOVE else "")
    details = "".join([
        f"{revision.get_author_kind_display()}, " if revision.author_id else "",
        f"from {revision.source_kind} {revision.source_id}, " if revision.source_kind else "",
        timezone.localtime(revision.created_at).strftime("%Y-%m-%d %H:%M"),
    ])
    message = format_html("<br><em>{}</em>", revision.message) if revision.message else ""
    return format_html(
        '<strong>{}</strong>{}\n      in <a href="{}">revision {}</a>\n      by {} <span class="muted">({})</span>{}',
        change.get_op_display(), moved, revision_url, change.revision_id, revision.author_label, details,
        message,
    )


def _exists_after(fs, path: str, page) -> bool:
    """Whether `path` is a file now. The first page starts with the newest change to it, which
    says so (not deleted, not moved away) without a query."""
    if page.number != 1:
        return fs.files.filter(path=path).exists()
    newest = page.object_list[0]
    return newest.path == path and newest.op != FileChange.Op.DELETE


@login_required
def revision_list(request, fs_id):
    fs = _fs(request, fs_id)
    context, (count,) = _base_with(request, fs, selectors.REVISION_COUNT)
    page = _page(request, selectors.revisions(fs), HISTORY_PAGE_SIZE, count)
    counts = selectors.change_counts([revision.pk for revision in page.object_list])
    for revision in page.object_list:
        revision.change_count = counts.get(revision.pk, 0)
    context["page"] = page
    template = "memory/revisions.html#rows" if request.htmx else "memory/revisions.html"
    return render(request, template, context)


@login_required
def revision_detail(request, fs_id, revision_id):
    fs = _fs(request, fs_id)
    revision = selectors.revision_get(fs, revision_id)
    style = "split" if request.GET.get("view") == "split" else "unified"
    changes = list(revision.changes.all())
    diff_html.attach(changes, style)
    context = _base(request, fs)
    context.update({"revision": revision, "changes": changes, "style": style})
    return render(request, "memory/revision.html", context)


@login_required
@require_POST
def revision_revert(request, fs_id, revision_id):
    fs = _editable(request, fs_id)
    revision = selectors.revision_get(fs, revision_id)
    try:
        new = services.revision_revert(revision=revision, author_kind=AUTHOR, author=request.user)
    except services.MemoryWriteError as exc:
        _refused(request, exc)
        return redirect("memory:revision", fs.pk, revision.pk)
    messages.success(request, f"Reverted revision {revision.pk} (as revision {new.pk}).")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("memory:revision", args=[fs.pk, new.pk])
    return redirect(target)


@login_required
@require_POST
def change_restore(request, fs_id, change_id):
    fs = _editable(request, fs_id)
    change = selectors.change_get(fs, change_id)
    try:
        services.file_restore(filesystem=fs, change=change, author_kind=AUTHOR, author=request.user)
    except services.MemoryWriteError as exc:
        _refused(request, exc)
        return redirect("memory:file-history", fs.pk, change.path)
    messages.success(request, f"Restored {change.path} to its text before revision {change.revision_id}.")
    return redirect("memory:file", fs.pk, change.path)


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
