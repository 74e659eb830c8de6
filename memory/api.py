"""The memory JSON API under /api/memory/, with the same permissions as the pages.

A write the verifier refuses answers 422 with the violations in `details`; a stale
`base_version` answers 409; another team's ids answer 404.
"""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from ninja import Field, File, Query, Router, Schema, UploadedFile
from ninja.pagination import paginate

from lindy.api_errors import ApiError
from lindy.pagination import MAX_LIMIT, BoundedLimitOffset, PageIn

from . import diffs, permissions, portable, selectors, services
from .models import VIA_API, FileSystem, MemoryFile
from .paths import PathError, clean_path

router = Router(tags=["memory"])
AUTHOR = services.AuthorKind.PERSON
MAX_CONTENT = services.MAX_FILE_BYTES


class FileSystemOut(Schema):
    id: int
    kind: str
    label: str
    title: str
    team_id: int | None
    owner_id: int | None
    can_edit: bool
    file_token_budget: int
    always_loaded_token_budget: int


class FileSummaryOut(Schema):
    path: str
    size: int
    tokens: int
    tokens_exact: bool
    version: int
    updated_at: datetime


class FileOut(FileSummaryOut):
    content: str


class FilePutIn(Schema):
    content: str = Field(..., max_length=MAX_CONTENT)
    base_version: int | None = Field(None, ge=0, description="The version you edited; omit or 0 to create.")
    message: str = Field("", max_length=services.MAX_MESSAGE)
    index_description: str | None = Field(
        None, max_length=services.MAX_DESCRIPTION, description="When creating: also add the file's line to index.md, in the same revision."
    )


class MoveIn(Schema):
    from_path: str = Field(..., alias="from", max_length=1000)
    to_path: str = Field(..., alias="to", max_length=1000)
    base_version: int | None = Field(None, ge=1)
    update_links: bool = True
    message: str = Field("", max_length=services.MAX_MESSAGE)


class ViolationOut(Schema):
    path: str
    kind: str
    detail: str


class VerifyOut(Schema):
    ok: bool
    violations: list[ViolationOut]
    file_token_budget: int
    always_loaded_token_budget: int


class ChangeOut(Schema):
    id: int
    op: str
    path: str
    old_path: str
    before_version: int | None
    after_version: int | None


class ChangeDiffOut(ChangeOut):
    diff: str


class RevisionOut(Schema):
    id: int
    author_kind: str
    author_email: str | None
    message: str
    source_kind: str
    source_id: str
    reverts_id: int | None
    created_at: datetime


class RevisionDetailOut(RevisionOut):
    changes: list[ChangeDiffOut]


class RevisionPageOut(Schema):
    count: int
    items: list[RevisionOut]


class WriteOut(Schema):
    revision_id: int
    file: FileOut | None = None


def _fs(request, fs_id: int) -> FileSystem:
    if not permissions.can_use_memory(request.user):
        raise ApiError(404, "No such file system.")
    return selectors.filesystem_get(request.user, fs_id)


def _editable(request, fs_id: int) -> FileSystem:
    fs = _fs(request, fs_id)
    if not permissions.can_edit_filesystem(request.user, fs):
        raise PermissionDenied("You may read this memory but not change it.")
    return fs


def _path(raw: str) -> str:
    try:
        return clean_path(raw)
    except PathError as exc:
        raise ApiError(422, f"Invalid path: {exc}") from None


def _fs_out(request, fs: FileSystem) -> dict:
    return {
        "id": fs.pk, "kind": fs.kind, "label": fs.label, "title": fs.title, "team_id": fs.team_id,
        "owner_id": fs.owner_id, "can_edit": permissions.can_edit_filesystem(request.user, fs),
        "file_token_budget": fs.file_token_budget, "always_loaded_token_budget": fs.always_loaded_token_budget,
    }


def _write(call):
    try:
        return call()
    except services.MemoryWriteError as exc:
        raise ApiError(exc.status, exc.message, exc.details) from None


def _revision_out(revision) -> dict:
    return {
        "id": revision.pk, "author_kind": revision.author_kind,
        "author_email": revision.author.email if revision.author_id else None, "message": revision.message,
        "source_kind": revision.source_kind, "source_id": revision.source_id, "reverts_id": revision.reverts_id,
        "created_at": revision.created_at,
    }


def _written(fs: FileSystem, revision, path: str | None) -> dict:
    file = MemoryFile.objects.filter(filesystem=fs, path=path).first() if path else None
    return {"revision_id": revision.pk, "file": file}


@router.get("/filesystems", response=list[FileSystemOut], summary="Your memory file systems and your teams'")
@paginate(BoundedLimitOffset)
def filesystem_list(request):
    if not permissions.can_use_memory(request.user):
        return []
    # As many as the user's teams, plus their own: read whole (ordered by team name), answered a page at a time.
    return [_fs_out(request, fs) for fs in selectors.filesystems_for(request.user)]


@router.get("/filesystems/{fs_id}/files", response=list[FileSummaryOut],
            summary="The files in path order, a page at a time: path, size, tokens")
@paginate(BoundedLimitOffset)
def file_list(request, fs_id: int):
    fs = _fs(request, fs_id)
    return MemoryFile.objects.filter(filesystem=fs).defer("content").order_by("path")


@router.get("/filesystems/{fs_id}/files/{path:path}", response=FileOut, summary="One file")
def file_get(request, fs_id: int, path: str):
    fs = _fs(request, fs_id)
    found = MemoryFile.objects.filter(filesystem=fs, path=_path(path)).first()
    if found is None:
        raise ApiError(404, f"There is no file {path}.")
    return found


@router.put("/filesystems/{fs_id}/files/{path:path}", response=WriteOut,
            summary="Create or update a file (send base_version to update)")
def file_put(request, fs_id: int, path: str, payload: FilePutIn):
    fs = _editable(request, fs_id)
    path = _path(path)
    revision = _write(lambda: services.file_write(
        filesystem=fs, path=path, content=payload.content, base_version=payload.base_version or None,
        author_kind=AUTHOR, author=request.user, message=payload.message,
        index_description=payload.index_description, create_only=not payload.base_version, source_kind=VIA_API,
    ))
    return _written(fs, revision, path)


@router.delete("/filesystems/{fs_id}/files/{path:path}", response=WriteOut, summary="Delete a file")
def file_delete(request, fs_id: int, path: str, base_version: int | None = None, update_links: bool = False):
    fs = _editable(request, fs_id)
    path = _path(path)
    revision = _write(lambda: services.file_delete(
        filesystem=fs, path=path, base_version=base_version, author_kind=AUTHOR, author=request.user,
        update_links=update_links,
    ))
    return _written(fs, revision, None)


@router.post("/filesystems/{fs_id}/moves", response=WriteOut, summary="Rename or move a file")
def file_move(request, fs_id: int, payload: MoveIn):
    fs = _editable(request, fs_id)
    source, target = _path(payload.from_path), _path(payload.to_path)
    revision = _write(lambda: services.file_move(
        filesystem=fs, path=source, new_path=target, base_version=payload.base_version, author_kind=AUTHOR,
        author=request.user, message=payload.message, update_links=payload.update_links,
    ))
    return _written(fs, revision, target)


@router.get("/filesystems/{fs_id}/verify", response=VerifyOut, summary="The verifier's verdict on the live files")
def verify(request, fs_id: int):
    fs = _fs(request, fs_id)
    violations = selectors.status(fs)
    return {"ok": not violations, "violations": [v.as_dict() for v in violations],
            "file_token_budget": fs.file_token_budget, "always_loaded_token_budget": fs.always_loaded_token_budget}


class RevisionPageIn(PageIn):
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    path: str | None = Field(None, max_length=1000, description="Only revisions that touched this file.")


@router.get("/filesystems/{fs_id}/revisions", response=RevisionPageOut, summary="Revisions, newest first")
def revision_list(request, fs_id: int, params: Query[RevisionPageIn]):
    fs = _fs(request, fs_id)
    queryset = selectors.revisions(fs)
    if params.path:
        path = _path(params.path)
        queryset = queryset.filter(pk__in=selectors.file_history(fs, path).values("revision_id"))
    return {"count": queryset.count(),
            "items": [_revision_out(r) for r in queryset[params.slice]]}


@router.get("/filesystems/{fs_id}/revisions/{revision_id}", response=RevisionDetailOut,
            summary="A revision with its diff")
def revision_get(request, fs_id: int, revision_id: int):
    fs = _fs(request, fs_id)
    revision = selectors.revision_get(fs, revision_id)
    changes = [
        {"id": c.pk, "op": c.op, "path": c.path, "old_path": c.old_path, "before_version": c.before_version,
         "after_version": c.after_version,
         "diff": diffs.unified_text(c.before, c.after, c.old_path or c.path, c.path)}
        for c in revision.changes.all()
    ]
    return {**_revision_out(revision), "changes": changes}


class RevertIn(Schema):
    message: str = Field("", max_length=services.MAX_MESSAGE)


@router.post("/filesystems/{fs_id}/revisions/{revision_id}/revert", response=WriteOut,
             summary="Revert a revision (as a new revision)")
def revision_revert(request, fs_id: int, revision_id: int, payload: RevertIn | None = None):
    fs = _editable(request, fs_id)
    revision = selectors.revision_get(fs, revision_id)
    new = _write(lambda: services.revision_revert(
        revision=revision, author_kind=AUTHOR, author=request.user, message=payload.message if payload else "",
    ))
    return _written(fs, new, None)



@router.get("/filesystems/{fs_id}/export", summary="The file system as a zip: its markdown files and manifest.json",
            response={200: bytes})
def export_zip(request, fs_id: int):
    fs = _fs(request, fs_id)
    response = HttpResponse(selectors.filesystem_export(fs), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{portable.export_name(fs)}"'
    return response


@router.post("/filesystems/{fs_id}/import", response=WriteOut,
             summary="Make the file system a zip's markdown files, as one revision through the verifier")
def import_zip(request, fs_id: int, archive: UploadedFile = File(...)):
    fs = _editable(request, fs_id)
    files = _write(lambda: portable.archive_read(archive, size=archive.size))
    revision = _write(lambda: services.filesystem_import(filesystem=fs, files=files, author_kind=AUTHOR,
                                                         author=request.user, source_id=(archive.name or "")[:100]))
    return _written(fs, revision, None)
