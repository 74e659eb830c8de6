"""Memory test helpers: files written the way every caller writes them, through the service."""

from __future__ import annotations

from memory import services
from memory.services import Change


def write_linked(fs, files: dict[str, str], *, author=None, author_kind="system", message="Test files"):
    """Create `files` and link each from index.md, in one revision."""
    index = fs.files.get(path="index.md")
    lines = "".join(f"- [{path}]({path}) — about {path}\n" for path in files)
    changes = [Change("create", path, content=content) for path, content in files.items()]
    changes.append(Change("update", "index.md", content=index.content + lines, base_version=index.version))
    return services.changes_apply(filesystem=fs, changes=changes, author_kind=author_kind, author=author,
                                  message=message)
