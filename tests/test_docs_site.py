"""The docs site as a reader gets it (issue 46, item 12), built with mkdocs and read in a real headless Chromium at
1280 px: no code line runs past its box, no variable name breaks mid-word, the search finds a flag (`--speed`) and a
function (`load_scenario`), the Anthropic page is named for what it is; and the README's opening list names the
Messages API. Screenshots go to artifacts/docs-*.png."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from chromium import launched
from optional import needs

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
WIDTH = 1280
BUILT = needs("mkdocs", "material", install='pip install -e ".[docs]"')  # the tests of the site as it is built
# Per page: code blocks wider than their box, and names in capitals (LLMSIM_WORKER_CONNECTIONS) on two lines.
CUT = """() => {
  const cut = [];
  for (const code of document.querySelectorAll("pre > code"))
    if (code.scrollWidth > code.clientWidth + 1) cut.push("code line: " + code.innerText.split("\\n")[0].slice(0, 60));
  for (const code of document.querySelectorAll(".md-typeset code"))
    if (!code.closest("pre") && /^[A-Z][A-Z0-9_]{8,}$/.test(code.innerText) && code.getClientRects().length > 1)
      cut.push("name: " + code.innerText);
  return cut;
}"""


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site, built as CI builds it, served on a free port."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(out)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def page(site: str) -> Iterator[Page]:
    with launched() as browser:
        yield _page(browser)


def _page(browser: Browser) -> Page:
    return browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()


def pages() -> list[str]:
    return sorted(p.stem for p in (ROOT / "docs").glob("*.md") if p.stem != "index")


@BUILT
def test_no_code_line_is_cut_and_no_name_breaks_at_1280_px(site: str, page: Page) -> None:
    problems = {}
    for name in ["", *pages()]:
        page.goto(f"{site}/{name}/" if name else f"{site}/")
        if cut := page.evaluate(CUT):
            problems[name or "index"] = cut
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(f"{site}/options/")
    page.screenshot(path=str(ARTIFACTS / "docs-options-1280.png"))
    page.goto(f"{site}/stores/")
    page.locator("pre").nth(1).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "docs-stores-1280.png"))
    assert problems == {}


def search(page: Page, site: str, query: str, wanted: str) -> list[str]:
    """The titles of the pages the site's search lists for `query`, typed as a reader types it: read until they
    hold `wanted` (the results of the query's first letters come first) or 15 s have passed."""
    page.goto(f"{site}/")
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially(query, delay=10)
    titles: list[str] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        titles = page.locator(".md-search-result__item > a article h1").all_inner_texts()
        if any(title.startswith(wanted) for title in titles):
            break
        page.wait_for_timeout(200)
    return titles


@BUILT
@pytest.mark.parametrize(("query", "page_title"), [
    ("--speed", "Server options"), ("load_scenario", "Agent testing"), ("--cors-origins", "Security"),
    ("LLMSIM_WORKER_CONNECTIONS", "Server options")])
def test_search_finds_flags_and_functions(site: str, page: Page, query: str, page_title: str) -> None:
    titles = search(page, site, query, page_title)
    assert any(title.startswith(page_title) for title in titles), titles


@BUILT
def test_the_anthropic_page_is_named_for_its_api_in_the_navigation(site: str, page: Page) -> None:
    page.goto(f"{site}/")
    labels = [label.strip() for label in page.locator("nav.md-nav--primary .md-nav__link").all_inner_texts()]
    assert "Anthropic Messages API" in labels and "Messages" not in labels


def test_the_readme_opening_list_names_the_messages_api() -> None:
    text = (ROOT / "README.md").read_text()
    opening = text[:text.index("\n## ")]
    assert "Messages API" in opening and "/v1/messages" in opening
