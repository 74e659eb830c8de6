"""`make screenshots` (manage.py screenshots): a demo login's home and main pages, as PNGs."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from lindy import demo

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.browser
def test_screenshots_of_a_login_at_both_widths(tmp_path):
    demo.seed()
    call_command("screenshots", "--login", "support@lindy.test", "--out", str(tmp_path), stdout=open("/dev/null", "w"))  # noqa: SIM115
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    for width in (390, 1280):
        assert f"support-lindy-{width}-home.png" in names
        assert f"support-lindy-{width}-channels-health.png" in names  # a page its menu links to
    assert "support-lindy-390-home-menu.png" in names  # the folded menu, opened
    assert all((tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in names)
    index = (tmp_path / "index.html").read_text()
    assert all(name in index for name in names)


@pytest.mark.parametrize("args, message", [
    (["--login", "nobody@example.test"], "Not a demo login"),
    (["--widths", "wide"], "--widths takes numbers"),
])
def test_bad_arguments_are_refused_before_anything_starts(tmp_path, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("screenshots", *args, "--out", str(tmp_path))
    assert not list(tmp_path.glob("*.png"))
