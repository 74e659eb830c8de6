"""Phones (issue 18 part 3): in headless Chromium, each demo login crawls every page it can reach
from the menu and the pages' links, at 390 px and 1280 px: no page is wider than the screen, none
answers an error, none throws a script error. The menu folds on a phone, without JavaScript too."""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from urllib.parse import urljoin, urlsplit, urlunsplit

import pytest

from lindy import demo
from tests.fixtures.live_browser import login, nav_click

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
# Bounds that keep the crawl near a minute and a half: every kind of page once (ids and query
# values do not make a new kind), a few pages per section, a ceiling per login.
PAGES_PER_LOGIN = 20
PAGES_PER_SECTION = 6
# Never followed: signing out, anything that deletes or changes (those are POST forms, which the
# crawl never submits, but the admin's delete confirmations are GET pages), machine endpoints.
SKIP = re.compile(r"^/(accounts/logout|api/|healthz|static/|media/)|/delete/|/history/|\.(vcf|zip|json|csv)$")


def _kind(path: str) -> str:
    """/memory/12/files/notes/a.md?view=who -> /memory/N/files/F?view: one visit per kind of page
    (ids, file paths and dotted route names make no new kind)."""
    parts = urlsplit(path)
    segments = []
    for segment in parts.path.split("/"):
        if segments and segments[-1] == "F":
            continue  # the rest of a file's path
        segments.append("N" if segment.isdigit() else "F" if "." in segment else segment)
    keys = sorted({pair.split("=")[0] for pair in parts.query.split("&") if pair and not pair.startswith("page=")})
    return "/".join(segments) + ("?" + "&".join(keys) if keys else "")


def _width(page) -> tuple[int, int]:
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return tuple(page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]"))


def _wider_than_screen(page) -> list[str]:
    """The elements that stick out on the right, to name in a failure."""
    return page.evaluate("""() => {
      const right = window.innerWidth + 1, found = [];
      for (const el of document.querySelectorAll('body *')) {
        const box = el.getBoundingClientRect();
        if (box.right > right && el.parentElement && el.parentElement.getBoundingClientRect().right <= right)
          found.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className ? '.' + el.className : ''} (${Math.round(box.right)} px)`);
      }
      return found.slice(0, 5);
    }""")


def _crawl(page, base: str) -> tuple[list[str], list[str]]:
    """Visits the pages reachable from the home page; returns (pages visited, problems)."""
    problems: list[str] = []
    visited: list[str] = []
    seen: set[str] = set()
    kinds: set[str] = set()
    sections: Counter[str] = Counter()
    queue: deque[str] = deque(["/"])
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    while queue and len(visited) < PAGES_PER_LOGIN:
        path = queue.popleft()
        kind, section = _kind(path), path.split("/")[1]
        if kind in kinds or sections[section] >= PAGES_PER_SECTION:
            continue
        kinds.add(kind)
        sections[section] += 1
        visited.append(path)
        page.set_viewport_size(PHONE)
        errors.clear()
        try:
            response = page.goto(base + path, wait_until="load")
            status = response.status if response else 0
        except Exception as exc:  # a link to a file: the browser downloads it instead of showing a page
            if "Download is starting" not in str(exc):
                raise
            status = page.request.get(base + path).status
            if status >= 400:
                problems.append(f"{path}: {status}")
            continue
        if status >= 400:
            problems.append(f"{path}: {status}")
            continue
        scroll, inner = _width(page)
        if scroll > inner + 1:
            problems.append(f"{path} at 390 px: {scroll} px wide: {_wider_than_screen(page)}")
        page.set_viewport_size(DESKTOP)
        scroll, inner = _width(page)
        if scroll > inner + 1:
            problems.append(f"{path} at 1280 px: {scroll} px wide: {_wider_than_screen(page)}")
        if errors:
            problems.append(f"{path}: script error {errors[:2]}")
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))"):
            target = urlsplit(urljoin(base + path, href))
            if target.netloc != urlsplit(base).netloc:
                continue
            link = urlunsplit(("", "", target.path, target.query, ""))
            if link not in seen and not SKIP.search(target.path):
                seen.add(link)
                queue.append(link)
    return visited, problems


def test_every_page_of_every_demo_login_fits_a_phone(browser_page):
    demo.seed()
    page, base = browser_page, browser_page.live_server_url
    started = time.monotonic()
    report, problems = {}, []
    for email, _role in demo.LOGINS:
        page.context.clear_cookies()
        page.set_viewport_size(DESKTOP)
        login(page, email, demo.PASSWORD)
        visited, found = _crawl(page, base)
        report[email] = len(visited)
        problems += [f"{email}: {line}" for line in found]
        # Each login reaches more than its home page: the menu and the pages' links were followed.
        assert len(visited) >= 3, (email, visited)
    assert not problems, "\n".join(problems)
    assert sum(report.values()) >= 40, report
    print(f"crawled {report} in {time.monotonic() - started:.0f} s")


def test_the_menu_folds_on_a_phone_and_opens_without_javascript(browser_page, live_server):
    demo.seed()
    page = browser_page
    login(page, "user@acme.test", demo.PASSWORD)
    page.set_viewport_size(DESKTOP)
    page.goto(live_server.url + "/")
    assert page.locator("[data-nav=memory]").is_visible()
    assert not page.locator("details[data-menu] > summary").is_visible()

    page.set_viewport_size(PHONE)
    assert not page.locator("[data-nav=memory]").is_visible()
    summary = page.locator("details[data-menu] > summary")
    assert summary.is_visible() and "Menu" in summary.inner_text()
    assert summary.locator("mark.badge").count() == 1  # the blocked actions' count shows while folded
    nav_click(page, "memory")  # unfolds the menu, then follows the link
    page.wait_for_url("**/memory/")
    # The offline banner is one slim line at most two lines high.
    assert page.locator("[data-offline-provider]").bounding_box()["height"] < 50

    # The same with JavaScript off: <details> opens by itself.
    context = page.context.browser.new_context(java_script_enabled=False, viewport=PHONE)
    try:
        bare = context.new_page()
        bare.goto(live_server.url + "/accounts/login/")
        bare.fill("input[name=username]", "user@acme.test")
        bare.fill("input[name=password]", demo.PASSWORD)
        bare.click("button[type=submit]")
        bare.wait_for_url(lambda url: "/accounts/login" not in url)
        assert not bare.locator("[data-nav=tasks]").is_visible()
        bare.click("details[data-menu] > summary")
        bare.click("[data-nav=tasks]")
        bare.wait_for_url("**/tasks/")
    finally:
        context.close()


def test_charts_keep_a_readable_height_on_a_phone(browser_page, live_server):
    demo.seed()
    page = browser_page
    login(page, "ops@lindy.test", demo.PASSWORD)
    page.set_viewport_size(PHONE)
    page.goto(live_server.url + "/router/costs/")
    page.wait_for_selector('canvas#cost-chart[data-drawn="1"]')
    box = page.locator("#cost-chart").bounding_box()
    assert box["height"] >= 200 and box["width"] <= PHONE["width"]
    page.goto(live_server.url + "/channels/health/")
    page.wait_for_function("window.lindyRatioChart !== undefined")
    assert page.locator("#ratio-chart").bounding_box()["height"] >= 200


# --- Wide content and empty states (issue 34 part 6) -----------------------------------------------

LONG_LINE = "https://example.test/" + "x" * 400  # one unbroken "word", like a URL or a hash
WIDE_TABLE = ("| " + " | ".join(f"Column heading number {i}" for i in range(9)) + " |\n"
              + "|" + "---|" * 9 + "\n"
              + "| " + " | ".join(f"a fairly long cell value {i}" for i in range(9)) + " |\n")
WIDE_FILE = f"# Drafting\n\n{LONG_LINE}\n\n{WIDE_TABLE}\n`{LONG_LINE}`\n\n    {LONG_LINE}\n"

# Texts the browser shows outside the screen's right edge, to name in a failure: every empty
# state must be readable without scrolling sideways.
_CUT_OFF = """() => {
  const right = window.innerWidth + 1, cut = [];
  for (const cell of document.querySelectorAll('td.muted, p.muted, td[colspan]')) {
    const range = document.createRange();
    range.selectNodeContents(cell);
    for (const box of range.getClientRects())
      if (box.width > 0 && box.right > right) { cut.push(`${cell.textContent.trim().slice(0, 60)} (${Math.round(box.right)} px)`); break; }
  }
  return cut;
}"""


def _check_fits(page, base: str, path: str) -> list[str]:
    page.set_viewport_size(PHONE)
    response = page.goto(base + path, wait_until="load")
    if response is None or response.status >= 400:
        return [f"{path}: {response.status if response else 'no response'}"]
    problems = []
    scroll, inner = _width(page)
    if scroll > inner + 1:
        problems.append(f"{path}: {scroll} px wide: {_wider_than_screen(page)}")
    problems += [f"{path}: cut off: {text}" for text in page.evaluate(_CUT_OFF)]
    return problems


def test_memory_files_with_long_lines_and_wide_tables_fit_a_phone(browser_page):
    from memory import services as memory_services
    from memory.models import Revision
    from tests.factories import PASSWORD, TeamFactory, member_of

    user = member_of(TeamFactory(name="Phone"), "member", email="phone@acme.example")
    fs = memory_services.filesystem_for_user(user)
    memory_services.file_write(filesystem=fs, path="drafting.md", content=WIDE_FILE, base_version=None,
                               author_kind=Revision.AuthorKind.PERSON, author=user, index_description="How I write emails")
    page, base = browser_page, browser_page.live_server_url
    login(page, user.email, PASSWORD)
    problems = []
    for path in (f"/memory/{fs.pk}/files/drafting.md", f"/memory/{fs.pk}/files/drafting.md?view=who",
                 f"/memory/{fs.pk}/edit/drafting.md", f"/memory/{fs.pk}/history/drafting.md",
                 f"/memory/{fs.pk}/revisions/", "/memory/context/"):
        problems += _check_fits(page, base, path)
    revision = fs.revisions.order_by("-pk").first()
    problems += _check_fits(page, base, f"/memory/{fs.pk}/revisions/{revision.pk}/")
    assert not problems, "\n".join(problems)


EMPTY_PAGES = ["/tasks/", "/meetings/", "/drafting/", "/drafting/charts/", "/drafting/learner/",
               "/drafting/learner/judge/", "/validator/", "/validator/outbox/", "/channels/", "/hydration/"]


def test_every_empty_state_is_readable_on_a_phone(browser_page):
    """A new member with nothing yet: each page's empty text wraps inside the screen."""
    from tests.factories import PASSWORD, TeamFactory, member_of

    user = member_of(TeamFactory(name="Empty"), "member", email="new@acme.example")
    page, base = browser_page, browser_page.live_server_url
    login(page, user.email, PASSWORD)
    problems = []
    from memory import services as memory_services

    for path in [*EMPTY_PAGES, f"/hydration/{memory_services.filesystem_for_user(user).pk}/"]:
        problems += _check_fits(page, base, path)
    assert not problems, "\n".join(problems)
