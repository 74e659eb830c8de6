"""Words for people on every page a demo login reaches (issue 35, part 2): the demo is seeded once
(lindy.demo.seed, as `manage.py seed_demo` does), then each demo login follows its navigation and the
first link of every kind of page below each section, the way a person clicks through
(tests/crawl.nav_and_detail_paths). What they read (tests/visible_words.visible_text: no head, scripts
or attributes; a tooltip is where an id belongs) has no route id, no environment variable name, no
Python dict or list repr and no number over 9,999 printed without grouping. Django's admin, where an
id is the subject, is not crawled; elsewhere an element marked `data-id-subject` (a provider's key
variable on the superuser's providers table, a staff command line) is the only allowance. The test of the test shows each finding is caught."""

from __future__ import annotations

import pytest
from django.test import Client

from lindy import demo
from router import routing
from tests.crawl import nav_and_detail_paths
from tests.visible_words import problems, visible_text

ROUTE_IDS = set(routing.registered_routes())


@pytest.mark.django_db
def test_every_demo_login_reads_words_for_people(seeded_demo):
    ctx = seeded_demo
    assert set(ctx.users) >= {"admin@acme.test", "user@acme.test", "admin@globex.test", "support@lindy.test",
                              "ops@lindy.test"}
    found, errors, visited = [], [], {}
    for email in sorted(ctx.users):
        client = Client()
        assert client.login(username=email, password=demo.PASSWORD), email
        nav, paths = nav_and_detail_paths(client)
        assert set(nav.values()) <= set(paths)
        visited[email] = paths
        for path in paths:
            response = client.get(path)
            if response.status_code >= 500:
                errors.append(f"{email} {path}: {response.status_code}")
            if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
                continue
            found += [f"{email} {path}: {p}" for p in problems(response.content.decode(), ROUTE_IDS)]
    assert not errors, errors
    # The crawl reaches the pages each role works on (else a clean result proves nothing).
    assert len(visited["user@acme.test"]) >= 15 and len(visited["ops@lindy.test"]) >= 20, visited
    assert any(p.startswith("/validator/decisions/") for p in visited["user@acme.test"]), visited["user@acme.test"]
    assert any(p.startswith("/router/rollouts/") for p in visited["ops@lindy.test"]), visited["ops@lindy.test"]
    assert not found, "words for machines on pages people read:\n" + "\n".join(found)


def test_the_reader_catches_each_kind_of_machine_word():
    """The test of the test: each finding on a planted page, and none where it is allowed."""
    page = """<html><head><title>x</title><script>var LINDY_X = {'a': 1};</script></head><body>
      <p>Set ANTHROPIC_API_KEY or LINDY_BASE_URL, and SLACK_BOT_TOKEN.</p>
      <p>Changed {'status': 'open'} and ['a', 'b'].</p>
      <table><tr><td>memory.summarize</td><td>validator</td><td>235251</td></tr></table>
    </body></html>"""
    found = problems(page, ROUTE_IDS)
    for expected in ("environment variable ANTHROPIC_API_KEY", "environment variable LINDY_BASE_URL",
                     "environment variable SLACK_BOT_TOKEN", "route id memory.summarize", "route id validator",
                     "unformatted number 235251"):
        assert expected in found, (expected, found)
    assert sum(f.startswith("Python repr") for f in found) == 2
    assert "LINDY_X" not in visible_text(page)

    fine = """<html><head><title>Costs</title></head><body>
      <p><span title="validator">Action checks</span> and <abbr title="LINDY_BASE_URL">the site address</abbr>.</p>
      <p>The validator checked it; the agent drafted it.</p>
      <p>235,251 tokens · $0.000123 · on 2026-12-03 10:15:42 · from +13125550105 · see /tasks/12345/ ·
         build 2e9bacb0 · 12,000 calls · 9999 runs</p>
      <p>Key from <code data-id-subject>$LINDY_PROVIDER_KEY_ATLAS</code>; run
         <code data-id-subject>python manage.py run_offline_eval memory.summarize TARGET</code></p>
    </body></html>"""
    assert problems(fine, ROUTE_IDS) == []
    # The allow-list is the marked element only: the same words beside it are found.
    assert problems(fine.replace("</body>", "<p>LINDY_PROVIDER_KEY_ATLAS</p></body>"), ROUTE_IDS) == [
        "environment variable LINDY_PROVIDER_KEY_ATLAS"]
