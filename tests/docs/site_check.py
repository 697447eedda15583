"""Check the built documentation site as a reader sees it: in headless Chromium, served from localhost.

``make docs-check`` runs this after ``make docs``. It

1. reads every HTML file of the site and checks each internal link (the file and its ``#anchor``), image, script
   and stylesheet, and that no page loads anything from another host (the site must work offline);
2. checks that every public name of the API reference's subpackages has its own page;
3. serves the site on 127.0.0.1 and opens the index, a user-guide page, a tutorial and an API page in headless
   Chromium (Debian's ``chromium`` and ``chromium-driver``; background networking off, every host but localhost
   unresolvable). On each page it fails on a request the server answers with an error, a JavaScript error or
   failed load in the console, an image that does not load, a broken link, or missing content (formulas typeset,
   the tutorial's figures), and it saves a screenshot.

Usage: ``python tests/docs/site_check.py docs/_build/html --screenshots docs/_build/screenshots``. The last line is
``docs-check: N passed, M failed``; the exit status is 1 when a check failed.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

#: The pages opened in the browser: path in the site, a phrase the page must show, and what else to check.
PAGES: tuple[tuple[str, str, str], ...] = (
    ("index.html", "Sparse, identifiable gene programmes", "figure"),
    ("user-guide/sparse-vae.html", "Spike-and-Slab Lasso", "math"),
    ("tutorials/quickstart.html", "Quick start", "figures"),
    ("api/generated/scsparse.model.SparseVAE.html", "setup_anndata", "api"),
)
#: Subpackages whose ``__all__`` must each have a page under ``api/generated/``.
API_PACKAGES = (
    "scsparse.model",
    "scsparse.tl",
    "scsparse.pl",
    "scsparse.results",
    "scsparse.data",
    "scsparse.module",
    "scsparse.train",
    "scsparse.nn",
    "scsparse.generic.models",
    "scsparse.generic.metrics",
    "scsparse.generic.datasets",
    "scsparse.generic.benchmarks",
)
MIN_TUTORIAL_FIGURES = 4
WINDOW = (1400, 1000)


@dataclass
class Report:
    """Passed and failed checks, printed as they come."""

    passed: int = 0
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        """Record one check; print it."""
        if ok:
            self.passed += 1
            print(f"  ok    {what}")
        else:
            self.failures.append(f"{what}: {detail}" if detail else what)
            print(f"  FAIL  {what}" + (f": {detail}" if detail else ""))
        return ok


# ---------------------------------------------------------------------------------------------------- static checks
class _PageParser(HTMLParser):
    """The anchors (``id``/``name``) of a page and its references (``href`` and ``src``) by tag."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v for k, v in attrs if v is not None}
        for key in ("id", "name") if tag != "meta" else ():
            if key in values:
                self.ids.add(values[key])
        if tag == "a" and "href" in values:
            self.refs.append((tag, "href", values["href"]))
        elif tag == "link" and "href" in values and values.get("rel", "") in ("stylesheet", "preload", "icon"):
            self.refs.append((tag, "href", values["href"]))
        elif tag in ("img", "script", "iframe", "source") and "src" in values:
            self.refs.append((tag, "src", values["src"]))


@functools.cache
def _parse(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def _resolve(page: Path, ref: str, root: Path) -> tuple[Path, str]:
    """The file a relative reference of ``page`` points to, and its fragment."""
    target, fragment = urldefrag(ref)
    path = unquote(urlsplit(target).path)
    if not path:
        return page, fragment
    resolved = (root / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
    resolved = Path(os.path.normpath(resolved))
    if resolved.is_dir():
        resolved = resolved / "index.html"
    return resolved, fragment


def static_checks(root: Path, report: Report) -> None:
    """Every internal reference of every page resolves; no page loads a resource from another host."""
    # Pages only: the theme copies Jinja macro files (``_static/*.html``) next to its assets.
    pages = sorted(p for p in root.rglob("*.html") if "_static" not in p.relative_to(root).parts)
    broken: list[str] = []
    external: list[str] = []
    for page in pages:
        for tag, attr, ref in _parse(page).refs:
            scheme = urlsplit(ref).scheme
            if scheme in ("http", "https") or ref.startswith("//"):
                if tag != "a":
                    external.append(f"{page.relative_to(root)}: <{tag} {attr}={ref}>")
                continue
            if scheme in ("mailto", "data", "javascript") or ref.startswith("#") and len(ref) == 1:
                continue
            target, fragment = _resolve(page, ref, root)
            if not target.is_file() or not target.resolve().is_relative_to(root.resolve()):
                broken.append(f"{page.relative_to(root)} -> {ref}")
            elif fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
                broken.append(f"{page.relative_to(root)} -> {ref} (no anchor #{fragment})")
    report.check(len(pages) > 0, f"site has pages ({len(pages)} HTML files)")
    report.check(not broken, "every internal link, image, script and stylesheet resolves", "; ".join(broken[:20]))
    report.check(not external, "no page loads a resource from another host", "; ".join(external[:20]))


def api_page_checks(root: Path, report: Report) -> None:
    """Every public name of every documented subpackage has its own API page."""
    missing = []
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        missing += [
            f"{package}.{name}"
            for name in module.__all__
            if not (root / "api" / "generated" / f"{package}.{name}.html").is_file()
        ]
    report.check(not missing, "one API page per public name of " + ", ".join(API_PACKAGES), ", ".join(missing))


# ---------------------------------------------------------------------------------------------------------- server
class _Handler(SimpleHTTPRequestHandler):
    """Serves the site and remembers every request's path and status."""

    requests: list[tuple[str, int]] = []

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.requests.append((urlsplit(self.path).path, int(code) if str(code).isdigit() else 0))

    def log_message(self, format: str, *args: object) -> None:
        return


def serve(root: Path) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``root`` on a free port of 127.0.0.1 in a background thread; return the server and its URL."""
    handler = functools.partial(_Handler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


# --------------------------------------------------------------------------------------------------------- browser
def _chromium() -> tuple[str, str]:
    """Paths of Debian's Chromium binary and its chromedriver."""
    binary = next((p for p in ("/usr/lib/chromium/chromium", shutil.which("chromium") or "") if Path(p).is_file()), "")
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not binary or not Path(driver).is_file():
        raise SystemExit(
            "docs-check needs Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver"
        )
    return binary, driver


def open_browser():
    """Headless Chromium with background networking off and every host but localhost unresolvable."""
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium's driver manager must not look for downloads
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = _chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--metrics-recording-only",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


_IMAGES_JS = """
return Array.from(document.images).map(img => ({
  src: img.currentSrc || img.src, complete: img.complete, width: img.naturalWidth,
  inArticle: !!img.closest('article, main')}));
"""
_LINKS_JS = "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);"


def _wait_for_images(browser, timeout: float = 15.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    images = browser.execute_script(_IMAGES_JS)
    while any(not img["complete"] for img in images) and time.monotonic() < deadline:
        time.sleep(0.2)
        images = browser.execute_script(_IMAGES_JS)
    return images


def check_page(browser, base: str, root: Path, page: str, phrase: str, kind: str, shots: Path, report: Report) -> None:
    """Open one page and check what a reader would notice; save its screenshot."""
    print(f"{page}")
    _Handler.requests.clear()
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(base + page)
    deadline = time.monotonic() + 20
    while browser.execute_script("return document.readyState") != "complete" and time.monotonic() < deadline:
        time.sleep(0.1)
    images = _wait_for_images(browser)
    if kind == "math":  # MathJax typesets after the load event
        deadline = time.monotonic() + 20
        while not browser.execute_script("return document.querySelectorAll('mjx-container').length") and (
            time.monotonic() < deadline
        ):
            time.sleep(0.2)
    time.sleep(0.5)  # late console messages, fonts

    status = dict(_Handler.requests).get("/" + page)
    report.check(status == 200, f"{page}: served", f"HTTP status {status}")
    # Chromium asks for /favicon.ico by itself; the site declares none.
    errors = [r for r in _Handler.requests if r[1] >= 400 and r[0] != "/favicon.ico"]
    report.check(not errors, f"{page}: every request the page made succeeded", ", ".join(f"{p} {c}" for p, c in errors))
    console = [e["message"] for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    report.check(not console, f"{page}: no JavaScript error or failed load in the console", " | ".join(console[:5]))
    broken = [img["src"] for img in images if not img["complete"] or img["width"] == 0]
    report.check(not broken, f"{page}: all {len(images)} images loaded", ", ".join(broken))
    text = browser.execute_script("return (document.querySelector('article') || document.body).innerText")
    report.check(phrase.lower() in text.lower(), f"{page}: shows '{phrase}'", f"not found in {len(text)} characters")

    bad_links = []
    for href in dict.fromkeys(browser.execute_script(_LINKS_JS)):
        if not href.startswith(base):
            continue
        target, fragment = _resolve(root / "index.html", href[len(base) :], root)
        if not target.is_file():
            bad_links.append(href)
        elif fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
            bad_links.append(href)
    report.check(not bad_links, f"{page}: every internal link on the page resolves", ", ".join(bad_links[:10]))

    if kind == "math":
        formulas = browser.execute_script("return document.querySelectorAll('mjx-container').length")
        report.check(formulas > 0, f"{page}: formulas typeset by the site's own MathJax ({formulas})")
    if kind in ("figure", "figures"):
        figures = [img for img in images if img["inArticle"] and img["width"] > 0]
        needed = MIN_TUTORIAL_FIGURES if kind == "figures" else 1
        report.check(len(figures) >= needed, f"{page}: at least {needed} figure(s) in the page ({len(figures)})")
    if kind == "api":
        methods = browser.execute_script("return document.querySelectorAll('dl.py.method').length")
        report.check(methods >= 10, f"{page}: documents the class's methods ({methods})")

    name = page.replace("/", "_").removesuffix(".html")
    browser.save_screenshot(str(shots / f"{name}.png"))
    if kind == "figures":  # the first figure of the tutorial, scrolled into view
        browser.execute_script(
            "const img = document.querySelector('article img'); if (img) img.scrollIntoView({block: 'start'});"
        )
        time.sleep(0.3)
        browser.save_screenshot(str(shots / f"{name}_figure.png"))


def main(argv: list[str] | None = None) -> int:
    """Run every check; return 1 when one failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site (docs/_build/html)")
    parser.add_argument("--screenshots", type=Path, default=Path("docs/_build/screenshots"))
    args = parser.parse_args(argv)
    root = args.site.resolve()
    report = Report()
    if not (root / "index.html").is_file():
        print(f"docs-check: no site at {root} (run make docs)", file=sys.stderr)
        return 1

    print("the whole site")
    static_checks(root, report)
    api_page_checks(root, report)

    args.screenshots.mkdir(parents=True, exist_ok=True)
    server, base = serve(root)
    browser = open_browser()
    try:
        for page, phrase, kind in PAGES:
            check_page(browser, base, root, page, phrase, kind, args.screenshots, report)
    finally:
        browser.quit()
        server.shutdown()
    print(f"screenshots: {args.screenshots}")
    for failure in report.failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(f"docs-check: {report.passed} passed, {len(report.failures)} failed")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
