"""Other apps reach the router only through its public surface (router.PUBLIC_MODULES), like
memory's. lint-imports' "router-public-surface" contract forbids the private modules by name;
these tests make sure a new private module cannot slip past that list, and read every import
(those inside functions, and dotted-path strings too) of every other app."""

from __future__ import annotations

import configparser
from pathlib import Path

import router
from tests.imports import imports_of

ROOT = Path(router.__file__).resolve().parent.parent
OTHER_APPS = ("lindy", "memory", "google_workspace", "hydration", "validator", "channels_app", "analyst", "agent",
              "drafting")


def _router_modules() -> set[str]:
    modules = set()
    for path in (ROOT / "router").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" in parts or not (path.parent / "__init__.py").exists():
            continue  # not a module of the package (router/evals holds data and a script)
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def _module_of(name: str, modules: set[str]) -> str:
    """The deepest router module `name` (a module, or a module's attribute) lies in."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return name


def test_other_apps_import_only_the_routers_public_modules():
    modules = _router_modules()
    offenders = []
    for app in OTHER_APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            package = ".".join(path.relative_to(ROOT).parent.parts)
            for line, name in imports_of(path.read_text(), package):
                if name.split(".")[0] != "router":
                    continue
                module = _module_of(name, modules)
                if module != "router" and module not in router.PUBLIC_MODULES:
                    offenders.append(f"{path.relative_to(ROOT)}:{line} {name}")
    assert offenders == []


def test_every_private_router_module_is_forbidden_by_the_contract():
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contract = config["importlinter:contract:router-public-surface"]
    forbidden = contract["forbidden_modules"].split()
    assert set(contract["source_modules"].split()) == set(OTHER_APPS)
    uncovered = [m for m in sorted(_router_modules() - set(router.PUBLIC_MODULES) - {"router"})
                 if not any(m == f or m.startswith(f + ".") for f in forbidden)]
    assert uncovered == []
    assert not set(forbidden) & set(router.PUBLIC_MODULES)
