"""Reading a module's imports with `ast`, the ones inside functions too, for tests of who may
import whom."""

from __future__ import annotations

import ast
from pathlib import Path

_DYNAMIC = ("import_module", "import_string", "__import__")


def imports_of(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in `source`, a module of `package`: `import`
    and `from` statements anywhere in the file (relative ones resolved), each imported name also as
    `module.name`, and string arguments of import_module / import_string / __import__ calls."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _DYNAMIC:
                found += [(node.lineno, arg.value) for arg in node.args
                          if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return found


def offending_imports(root: Path, package: str, forbidden: str) -> list[str]:
    """`file:line module` for every import of `forbidden` (or a module under it) in the .py files
    under `root`, the directory of `package`."""
    offenders = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        subpackage = ".".join([package, *relative.parent.parts])
        for line, name in imports_of(path.read_text(), subpackage):
            if name == forbidden or name.startswith(forbidden + "."):
                offenders.append(f"{relative}:{line} {name}")
    return offenders
