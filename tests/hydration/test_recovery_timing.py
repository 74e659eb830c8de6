"""Recovery within one minute (issue 12): with the default settings, a run whose worker was killed
is queued again by the recovery sweep at most (stale threshold + sweep period) after its last
heartbeat, and that worst case is under 60 s, for every job with a heartbeat (hydration runs,
prompt optimizations). The defaults are the ones the README states."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["HYDRATION_HEARTBEAT_SECONDS", "HYDRATION_HEARTBEAT_STALE_SECONDS", "HYDRATION_RECOVER_EVERY_SECONDS"]
OPTIMIZER = ["ROUTER_OPTIMIZE_HEARTBEAT_SECONDS", "ROUTER_OPTIMIZE_STALE_SECONDS", "ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS"]


def _defaults(names: list[str]) -> dict[str, float]:
    """The settings as a deployment with none of these variables set gets them."""
    env = {k: v for k, v in os.environ.items() if k not in names}
    env["DJANGO_SETTINGS_MODULE"] = "lindy.settings"
    code = ("import django; django.setup(); from django.conf import settings; "
            f"print(' '.join(str(float(getattr(settings, n))) for n in {names!r}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return dict(zip(names, map(float, out.stdout.split()), strict=True))


@pytest.mark.parametrize("names", [NAMES, OPTIMIZER], ids=["hydration", "optimizer"])
def test_the_worst_case_recovery_from_the_default_settings_is_under_a_minute(names):
    d = _defaults(names)
    beat, stale, sweep = (d[n] for n in names)
    assert stale + sweep < 60, d  # the last beat, then stale, then up to one sweep period
    # A live worker misses at least two beats before it counts as dead (a slow write is not a death).
    assert stale >= 3 * beat > 0, d


def test_the_beat_entries_use_the_sweep_periods():
    from django.conf import settings

    from lindy import schedules

    every = {e.task: e.every_seconds for e in schedules.registered()}
    assert every["hydration.tasks.recover"] == settings.HYDRATION_RECOVER_EVERY_SECONDS
    assert every["router.tasks.optimization_recover"] == settings.ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS


def test_the_readme_states_the_defaults():
    d = _defaults(NAMES)
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `HYDRATION_HEARTBEAT_SECONDS`"))
    stated = [float(n) for n in re.findall(r"\((\d+) s\)", row)]
    assert stated == [d[n] for n in NAMES], (row, d)
    sweep = int(d["HYDRATION_RECOVER_EVERY_SECONDS"])
    assert f"`hydration.recover` beat sweep (every {sweep} s)" in readme
    d = _defaults(OPTIMIZER)
    row = next(line for line in readme.splitlines() if line.startswith("| `ROUTER_OPTIMIZE_HEARTBEAT_SECONDS`"))
    assert [float(n) for n in re.findall(r"\((\d+) s\)", row)] == [d[n] for n in OPTIMIZER], (row, d)
