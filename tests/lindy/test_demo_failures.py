"""A demo that fails says so: seed_demo exits non-zero naming the step, keeps nothing, and never
prints "ready" over a failure."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from hydration.models import Run
from hydration.services import runs as hydration_runs
from lindy.models import User


@pytest.mark.django_db
def test_a_failed_hydration_run_fails_the_demo_naming_the_step(monkeypatch):
    def broken(run, progress):
        raise RuntimeError("near \"INSERT\": syntax error")

    monkeypatch.setattr(hydration_runs, "_pipeline", broken)
    out = io.StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("seed_demo", stdout=out)
    assert "hydration" in str(failure.value)
    assert "syntax error" in str(failure.value)
    assert "ready" not in out.getvalue()
    assert not User.objects.exists() and not Run.objects.exists()  # rolled back whole


@pytest.mark.django_db
def test_a_seeder_that_raises_is_named(monkeypatch):
    from lindy import demo

    def explode(ctx):
        raise ValueError("boom")

    monkeypatch.setattr(demo, "_SEEDERS", [*demo._SEEDERS, (99, explode)])
    with pytest.raises(CommandError, match="ValueError: boom"):
        call_command("seed_demo", stdout=io.StringIO())


@pytest.mark.django_db
def test_the_demo_has_no_failed_run():
    call_command("seed_demo", stdout=io.StringIO())
    assert Run.objects.exists()
    assert not Run.objects.exclude(status__in=[Run.Status.SUCCEEDED, Run.Status.NO_CHANGES]).exists()
