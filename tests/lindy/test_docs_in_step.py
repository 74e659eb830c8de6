"""Docs and tools in step with the code (issue 27 part 8): every product app (an installed app
whose package is in this repository) is in the README's layout and layers, in ruff's first-party
list and in import-linter's packages."""

from __future__ import annotations

import configparser
import re
import tomllib
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]


def _product_apps() -> set[str]:
    # The virtualenv lives in the checkout too (`make install` puts it in .venv): its packages are not ours.
    return {config.name.split(".")[0] for config in apps.get_app_configs()
            if Path(config.path).resolve().is_relative_to(ROOT) and "site-packages" not in Path(config.path).parts}


def test_the_product_apps_are_the_ones_we_know():
    assert _product_apps() >= {"lindy", "router", "memory", "hydration", "validator", "channels_app", "analyst",
                               "agent", "drafting"}


def test_readme_layout_and_layers_name_every_app():
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1]
    rows = set(re.findall(r"^\| `([a-z_]+)/` \|", layout, flags=re.M))
    layers = layout.split("Apps import only apps below them:", 1)[1].split(";", 1)[0]
    for app in _product_apps():
        assert app in rows, f"README's layout has no row for {app}/"
        assert f"`{app}`" in layers, f"README's layers leave out {app}"


def test_ruff_and_import_linter_know_every_app():
    first_party = set(tomllib.loads((ROOT / "ruff.toml").read_text())["lint"]["isort"]["known-first-party"])
    linter = configparser.ConfigParser()
    linter.read(ROOT / ".importlinter")
    roots = set(linter["importlinter"]["root_packages"].split())
    assert _product_apps() <= first_party
    assert _product_apps() <= roots


def test_coverage_measures_every_app():
    """.coveragerc's sources are the apps: a new app is measured (and counted in the floor) from day one."""
    coverage = configparser.ConfigParser()
    coverage.read(ROOT / ".coveragerc")
    assert _product_apps() <= set(coverage["run"]["source"].split())
