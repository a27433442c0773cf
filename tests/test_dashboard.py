"""/llmsim/ui in a real headless Chromium (Debian's `chromium`, driven by Playwright): it loads, shows the traffic
it was sent, follows new requests, its fault control works, and a screenshot is kept in artifacts/."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest
from playwright.sync_api import Browser, Page, expect

from chromium import launched
from llmsim.testing import ServerProcess

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
SCENARIO = {"name": "support-bot", "turns": [{"text": "Hello from the script."}, {"text": "Anything else?"}]}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1600, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
    yield page
    context.close()
    assert not errors, errors  # the page's script ran without an exception (a 401 is the only network error)


def stream(client: openai.OpenAI, model: str) -> str:
    with client.responses.stream(model=model, input="Tell me about the sea.") as events:
        return events.get_final_response().id


def test_dashboard_shows_live_traffic_and_controls_faults(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], page: Page) -> None:
    server = start_server("--fault", "server_error;models=gpt-4.1-nano")
    client = sdk_client(server)
    first_id = stream(client, "gpt-4o-mini")
    stream(client, "gpt-4o-mini")
    client.responses.create(model="gpt-4o", input="Hi", extra_body={"future_param": 1})  # accepted, with a warning
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-4.1-nano", input="Hi")
    httpx.put(f"{server.url}/llmsim/admin/scenarios", json=SCENARIO).raise_for_status()

    page.goto(f"{server.url}/llmsim/ui")
    rows = page.locator("#requests tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("gpt-4.1-nano")  # newest first
    expect(rows.first).to_contain_text("server_error")
    expect(rows.first).to_contain_text("500")
    expect(rows.nth(1).locator(".warnings")).to_have_text("1 warning")
    expect(rows.nth(1).locator(".warnings")).to_have_attribute("title", "unknown parameter 'future_param'")
    expect(page.locator("#k-faults")).to_have_text("1")
    expect(page.locator("#k-rps-sub")).to_have_text("3 finished")
    expect(page.locator("#legend")).to_contain_text("gpt-4o-mini")
    expect(page.locator("#ttft-compare")).to_contain_text("(2 requests)")
    bars = page.eval_on_selector_all("#hist-ttft rect.bar", "bars => bars.map(b => Number(b.dataset.count))")
    assert sum(bars) == 2  # the two streams' TTFT, drawn
    expect(page.locator("#ttft-compare")).to_contain_text("profile p50")
    chaos = page.locator("#chaos")
    expect(chaos).to_contain_text("server_error")
    expect(chaos).to_contain_text("support-bot")
    expect(chaos).to_contain_text("next: turns[0]")
    expect(chaos).to_contain_text("Hello from the script.")

    # New requests show up without a reload.
    stream(client, "gpt-4.1")
    expect(rows.first).to_contain_text("gpt-4.1", timeout=5000)
    expect(rows).to_have_count(5)
    expect(page.locator("#k-rps-sub")).to_have_text("4 finished")
    expect(chaos).to_contain_text("next: turns[1]")  # the scenario moved on

    # Pause: the rule stops firing; resume: it fires again.
    page.click("#pause")
    expect(page.locator("#pause")).to_have_text("Resume faults")
    expect(page.locator("#paused-badge")).to_be_visible()
    assert httpx.get(f"{server.url}/llmsim/admin/faults").json().get("faults", []) == []
    client.responses.create(model="gpt-4.1-nano", input="Hi")
    page.click("#pause")
    expect(page.locator("#pause")).to_have_text("Pause faults")
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-4.1-nano", input="Hi")
    expect(page.locator("#k-faults")).to_have_text("2")

    # Click-through: the stored response and its events.
    page.locator(f'#requests tbody tr[title="{first_id}"]').click()
    expect(page.locator("#modal")).to_be_visible()
    expect(page.locator("#modal-response")).to_contain_text(first_id)
    expect(page.locator("#modal-events")).to_contain_text("response.completed")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-modal.png"))
    page.click("#modal-close")
    expect(page.locator("#modal")).to_be_hidden()

    # Reset: the page's counters and the request log start again from zero.
    page.click("#reset")
    expect(page.locator("#k-faults")).to_have_text("0")
    expect(page.locator("#k-rps-sub")).to_have_text("0 finished")
    expect(rows).to_have_count(0)
    stream(client, "gpt-4o")
    expect(rows).to_have_count(1)
    expect(page.locator("#k-rps-sub")).to_have_text("1 finished")
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"))
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000


def test_dashboard_asks_for_the_admin_key(start_server: Callable[..., ServerProcess],
                                          sdk_client: Callable[..., openai.OpenAI], page: Page) -> None:
    server = start_server("--admin-key", "admin-secret")
    sdk_client(server).responses.create(model="gpt-4o", input="Hi")
    refused = httpx.get(f"{server.url}/llmsim/ui/api/state")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(f"{server.url}/llmsim/ui/api/state",
                     headers={"Authorization": "Bearer admin-secret"}).status_code == 200

    page.goto(f"{server.url}/llmsim/ui")
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#requests tbody tr")).to_have_count(0)
    page.fill("#login-key", "admin-secret")
    page.click("#login button")
    expect(page.locator("#login")).to_be_hidden()
    expect(page.locator("#requests tbody tr")).to_have_count(1)
    expect(page.locator("#live")).to_have_class(re.compile(r"^live$"))


DRAWN = """() => {  // per series: its points all numbers, and how many canvas pixels have its colour
  const plot = charts["chart-rps"].plot;
  const ctx = plot.ctx, {width, height} = ctx.canvas, pixels = ctx.getImageData(0, 0, width, height).data;
  return plot.series.slice(1).map((series, i) => {
    const hex = series._stroke || series.stroke, rgb = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
    let painted = 0;
    for (let p = 0; p < pixels.length; p += 4)
      if ([0, 1, 2].every((c) => Math.abs(pixels[p + c] - rgb[c]) < 8)) painted++;
    return {label: series.label, finite: plot.data[i + 1].every(Number.isFinite), painted};
  });
}"""


def test_the_requests_per_second_chart_draws_every_model_that_came_later(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], page: Page) -> None:
    """Issue 46, item 7: a model is in the page's counts only from its first request; before, `undefined - 0` made
    its rate NaN, and one NaN emptied its series: the chart stayed blank under the traffic of several models."""
    server = start_server()
    client = sdk_client(server)
    client.responses.create(model="gpt-4o-mini", input="Hi")
    page.goto(f"{server.url}/llmsim/ui")
    expect(page.locator("#k-rps-sub")).to_have_text("1 finished")
    expect_soon(lambda: page.evaluate("history.length") >= 3)  # points where the later models are not yet counted
    for model in ("gpt-4o", "gpt-4.1", "gpt-4.1", "gpt-4.1"):  # rates apart: lines that do not cover each other
        client.responses.create(model=model, input="Hi")
    expect(page.locator("#k-rps-sub")).to_have_text("5 finished")
    expect_soon(lambda: page.evaluate("charts['chart-rps'].plot.series.length") == 4)
    series = page.evaluate(DRAWN)
    assert sorted(s["label"] for s in series) == ["gpt-4.1", "gpt-4o", "gpt-4o-mini"]
    assert all(s["finite"] for s in series), series
    assert all(s["painted"] > 20 for s in series), series  # each model's line is on the canvas


def test_dashboard_keeps_its_charts_across_a_reload_and_shows_a_cut_stream_as_a_fault(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], page: Page) -> None:
    """The server samples the charts' series (llmsim/metrics/history.py): a page opened (or reloaded) later starts
    with the points from before it opened. A stream a fault cut shows as that fault, never as a green 200."""
    server = start_server()
    client = sdk_client(server)
    for _ in range(3):
        client.responses.create(model="gpt-4o-mini", input="Hi")
    dropped = {"X-LLMSim-Fault": "stream_drop"}
    with pytest.raises(openai.APIConnectionError), client.responses.stream(
            model="gpt-4o-mini", input="Tell me about the sea.", extra_headers=dropped) as events:
        events.get_final_response()

    def sampled() -> list[dict[str, object]]:
        points = httpx.get(f"{server.url}/llmsim/ui/api/history").json()["points"]
        return [p for p in points if p["finished"].get("gpt-4o-mini") == 4]

    expect_soon(lambda: bool(sampled()))
    before = sampled()[0]
    assert before["faults"] == {"stream_drop": 1}

    for reload in (False, True):
        page.reload() if reload else page.goto(f"{server.url}/llmsim/ui")
        expect(page.locator("#k-rps-sub")).to_have_text("4 finished")
        first = page.evaluate("history[0].t")
        opened = page.evaluate("Date.now() / 1000")
        assert first <= float(before["t"]) < opened  # a point sampled before the page (re)opened
        xs = page.evaluate("charts['chart-faults'].plot.data[0]")
        assert min(xs) == first and len(xs) > 2
        row = page.locator("#requests tbody tr").filter(has_text="stream_drop")
        expect(row.locator(".pill.bad")).to_have_text("dropped")
        assert row.locator(".pill.ok").count() == 0


def test_no_label_is_cut_from_1280_px_up(start_server: Callable[..., ServerProcess],
                                         sdk_client: Callable[..., openai.OpenAI], page: Page) -> None:
    """Every caption, figure and chart label is whole (no ellipsis, nothing past its box) at common widths from
    1,280 px, with long names in every panel."""
    server = start_server("--fault", "server_error;models=gpt-4.1-nano", "--fault",
                          "stream_drop;probability=0.5;models=gpt-4o-mini", "--rpm", "600", "--tpm", "100000")
    client = sdk_client(server)
    for model in ("gpt-4o-mini", "claude-sonnet-4-5-20250929", "gpt-4.1-nano", "o3-mini"):
        for _ in range(2):
            try:
                stream(client, model)
            except (openai.APIError, httpx.HTTPError):
                pass
    httpx.put(f"{server.url}/llmsim/admin/scenarios", json={"name": "a-support-bot-with-a-long-name", "turns": [
        {"text": "Hello from the script, with a long scripted answer to show."}]}).raise_for_status()
    page.goto(f"{server.url}/llmsim/ui")
    expect(page.locator("#k-faults-sub")).to_contain_text("kind")
    for width, height in ((1280, 720), (1280, 800), (1440, 900), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(250)  # the resize redraws the charts at the new size
        assert page.evaluate(CUT) == [], (width, height)


# Elements with text of their own whose text overflows their box, and SVG labels past their drawing's edges.
CUT = """() => {
  const cut = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('.modal') || el.closest('svg') || el.closest('.uplot') || !el.offsetParent) continue;
    if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const style = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth + 1 && (style.overflowX !== 'visible' || style.textOverflow === 'ellipsis'))
      cut.push(`${el.tagName}#${el.id}: ${el.textContent.slice(0, 60)}`);
  }
  for (const text of document.querySelectorAll('svg text')) {
    const box = text.getBBox(), view = text.ownerSVGElement.viewBox.baseVal;
    if (box.x < -0.5 || box.x + box.width > view.width + 0.5 || box.y < -0.5 || box.y + box.height > view.height + 0.5)
      cut.push(`svg: ${text.textContent}`);
  }
  return cut;
}"""


def expect_soon(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)
