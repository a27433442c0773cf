"""A demo for the live dashboard: an LLMSim with a few fault rules and a scenario, under steady traffic.

Needs the `examples` extra (`pip install -e ".[examples]"`: the openai SDK; Playwright for --screenshot, which
drives the system Chromium at /usr/bin/chromium, `apt-get install chromium`; never `playwright install`).

    python examples/dashboard_demo.py                       # then open the printed /llmsim/ui address
    python examples/dashboard_demo.py --screenshot docs/dashboard.png   # the README's picture
    python examples/dashboard_demo.py --seconds 5           # stop after 5 s (CI runs it so)

Several clients stream and call three models at realistic speed; some requests get faults, a few hit an
RPM limit. Ctrl-C, or `kill` (SIGTERM) and a closed terminal (SIGHUP), stop it and its server.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

import httpx
import openai

from llmsim.testing import ServerProcess

MODELS = ["gpt-4o", "gpt-4o", "gpt-4o-mini", "gpt-4o-mini", "gpt-4.1-nano"]
FAULTS = ["server_error;every=11", "stream_drop;every=17;endpoints=responses", "rate_limit;every=23"]
SCENARIO = {"name": "support-bot", "on_exhausted": "simulate",
            "turns": [{"text": "Hello! How can I help?"}, {"text": "Your order ships today."}]}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def traffic(base_url: str, model: str, stop: threading.Event) -> None:
    client = openai.OpenAI(base_url=base_url, api_key="sk-demo", max_retries=0)
    turn = 0
    while not stop.is_set():
        turn += 1
        try:
            if turn % 4 == 0:
                client.responses.create(model=model, input="Write a haiku about tides.", max_output_tokens=60)
            else:
                with client.responses.stream(model=model, input="Tell me about the sea.",
                                             max_output_tokens=160) as events:
                    for _ in events:
                        pass
        except openai.OpenAIError:
            time.sleep(1.0)  # a fault: what a client would see; back off, then on to the next request


def screenshot(url: str, path: str, seconds: float) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        page.goto(url)
        time.sleep(seconds)  # a few minutes of history would look better; 40 s is enough for every panel
        page.screenshot(path=path)
        browser.close()


def exit_on(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP end the script as Ctrl-C does, through the `with` that stops its server (by default they
    end Python at once, and the server ran on under PID 1)."""
    sys.exit(128 + signum)


def main() -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screenshot", help="save a 1920x1080 screenshot of the dashboard here, then stop")
    parser.add_argument("--seconds", type=float, help="stop after this long (default: on Ctrl-C; with --screenshot, "
                        "it is taken after this long, 40 s by default)")
    args = parser.parse_args()
    flags = ["--speed", "1", "--rpm", "60"] + [f for spec in FAULTS for f in ("--fault", spec)]
    with ServerProcess(*flags) as server:
        httpx.put(f"{server.url}/llmsim/admin/scenarios", json=SCENARIO).raise_for_status()
        stop = threading.Event()
        for model in MODELS:
            threading.Thread(target=traffic, args=(server.base_url, model, stop), daemon=True).start()
        url = f"{server.url}/llmsim/ui"
        print(f"dashboard: {url}", flush=True)
        try:
            if args.screenshot:
                screenshot(url, args.screenshot, 40.0 if args.seconds is None else args.seconds)
            else:
                stop.wait(args.seconds)
        except KeyboardInterrupt:
            pass
        stop.set()
        counters = httpx.get(f"{server.url}/llmsim/admin/faults/counters").json()
        print(f"counters: {counters}", flush=True)


if __name__ == "__main__":
    main()
