"""`manage.py screenshots` (`make screenshots`): every demo login's home page and main pages (those
its menu links to), at a phone's and a desktop's width, as full-page PNGs for review.

It serves the product from this process on a free local port, over the configured database (run
`manage.py seed_demo` first: `make screenshots` does), and drives headless Chromium through
Playwright (Debian's /usr/bin/chromium, or CHROMIUM_PATH). Writes
var/screenshots/<login>-<width>-<page>.png and an index.html that shows them side by side.
"""

from __future__ import annotations

import os
import re
import threading
from html import escape
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management.base import BaseCommand, CommandError
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler, get_internal_wsgi_application

from lindy import demo

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the standard library's name)
        pass


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "home"


class Command(BaseCommand):
    help = "Screenshots of each demo login's home and main pages at 390 and 1280 px, into var/screenshots/."

    def add_arguments(self, parser):
        parser.add_argument("--out", default=str(settings.VAR_DIR / "screenshots"),
                            help="Folder for the PNGs (default: var/screenshots).")
        parser.add_argument("--widths", default="390,1280", help="Viewport widths in px, comma-separated.")
        parser.add_argument("--login", action="append", dest="logins",
                            help="Only this demo login (repeatable; default: every demo login).")

    def handle(self, *args, **options):
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise CommandError("Playwright is not installed: `make install` installs requirements.txt.") from exc
        if not os.path.exists(CHROMIUM):
            raise CommandError(f"Chromium not found at {CHROMIUM}: `make chromium` installs Debian's package.")
        try:
            widths = [int(w) for w in options["widths"].split(",") if w.strip()]
        except ValueError as exc:
            raise CommandError("--widths takes numbers, e.g. 390,1280.") from exc
        known = [email for email, _ in demo.LOGINS]
        logins = options["logins"] or known
        unknown = sorted(set(logins) - set(known))
        if unknown:
            raise CommandError(f"Not a demo login: {', '.join(unknown)} (the logins are {', '.join(known)}).")
        out = Path(options["out"])
        out.mkdir(parents=True, exist_ok=True)

        server = ThreadedWSGIServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=False)
        server.set_app(StaticFilesHandler(get_internal_wsgi_application()))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        shots: list[tuple[str, int, str, str]] = []
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
                try:
                    for email in logins:
                        for width in widths:
                            shots += self._persona(browser, base, email, width, out)
                finally:
                    browser.close()
        finally:
            server.shutdown()
            server.server_close()
        self._index(out, shots)
        self.stdout.write(self.style.SUCCESS(f"{len(shots)} screenshots in {out}/ (open index.html)."))

    def _persona(self, browser, base: str, email: str, width: int, out: Path) -> list[tuple[str, int, str, str]]:
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(base + "/accounts/login/")
            page.fill("input[name=username]", email)
            page.fill("input[name=password]", demo.PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/accounts/login" not in url)
            paths = ["/"] + page.eval_on_selector_all(
                "[data-nav]", "links => links.map(a => a.getAttribute('href'))")
            shots = []
            for path in dict.fromkeys(paths):
                page.goto(base + path, wait_until="load")
                page.wait_for_timeout(300)  # charts draw after load
                name = f"{email.split('@')[0]}-{email.split('@')[1].split('.')[0]}-{width}-{_slug(path)}.png"
                page.screenshot(path=str(out / name), full_page=True)
                shots.append((email, width, path, name))
                self.stdout.write(f"  {name}")
                if path == "/" and width < 768 and page.locator("details[data-menu] > summary").is_visible():
                    page.click("details[data-menu] > summary")  # the folded menu, opened
                    name = name.replace("-home.png", "-home-menu.png")
                    page.screenshot(path=str(out / name))
                    shots.append((email, width, "/ (menu open)", name))
                    self.stdout.write(f"  {name}")
            return shots
        finally:
            context.close()

    def _index(self, out: Path, shots: list[tuple[str, int, str, str]]) -> None:
        rows = []
        for email, _role in demo.LOGINS:
            mine = [shot for shot in shots if shot[0] == email]
            if not mine:
                continue
            rows.append(f"<h2>{escape(email)}</h2>")
            for path in dict.fromkeys(shot[2] for shot in mine):
                cells = "".join(
                    f'<figure><a href="{escape(name)}"><img src="{escape(name)}" width="{min(width, 640) // 2}" '
                    f'alt="{escape(path)} at {width} px"></a><figcaption>{width} px</figcaption></figure>'
                    for _, width, p, name in mine if p == path)
                rows.append(f"<h3>{escape(path)}</h3><div style='display:flex;gap:1rem;align-items:flex-start'>{cells}</div>")
        (out / "index.html").write_text(
            "<!doctype html><meta charset='utf-8'><title>Lindy screenshots</title>"
            "<body style='font-family:sans-serif'><h1>Lindy screenshots</h1>" + "".join(rows) + "</body>\n")
