"""How many of LLMSim's modules one plain `POST /v1/responses` crosses, and how often it goes from one into another.

A request that runs through few modules, each called from a few places, is one a reader can follow; this counts
it. The app serves one request in-process (Flask's test client, the sim backend, speed 0) under `sys.setprofile`:
every Python call whose code is in an `llmsim.*` module marks that module as run, and a call whose caller is in a
different `llmsim.*` module is a crossing (a generator resumed counts as a call, as the profiler reports it); an
upward one goes from a module below the transport into it (`llmsim.api.*`, `llmsim.app`): a layer calling back. One
request of each kind is served first, unmeasured, so imports and caches are not counted.

    python bench/crossings.py            # plain and streamed, the totals
    python bench/crossings.py --detail   # and the modules, and the crossings by (caller → callee)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from types import FrameType
from typing import Any

from llmsim.app import create_app
from llmsim.config import Settings

BODY = {"model": "gpt-4.1-mini", "input": "Say hello in five words."}
TRANSPORT = ("llmsim.api.", "llmsim.app")


def _transport(module: str) -> bool:
    return module.startswith(TRANSPORT)


def _module(frame: FrameType | None) -> str | None:
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name if name == "llmsim" or name.startswith("llmsim.") else None


def measure(client: Any, body: dict[str, Any]) -> tuple[set[str], Counter[tuple[str, str]]]:
    """The llmsim modules whose code ran while `body` was posted and its answer read, and the crossings."""
    modules: set[str] = set()
    crossings: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        callee = _module(frame)
        if callee is None:
            return
        modules.add(callee)
        caller = _module(frame.f_back)
        if caller is not None and caller != callee:
            crossings[(caller, callee)] += 1

    sys.setprofile(profile)
    try:
        response = client.post("/v1/responses", json=body)
        response.get_data()
    finally:
        sys.setprofile(None)
    assert response.status_code == 200, response.get_data(as_text=True)
    return modules, crossings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="list the modules and the crossings")
    args = parser.parse_args()
    client = create_app(Settings(speed=0.0, seed=7)).test_client()
    for label, body in (("plain", BODY), ("stream", {**BODY, "stream": True})):
        client.post("/v1/responses", json=body).get_data()  # warm: imports, caches, metric children
        modules, crossings = measure(client, body)
        upward = sum(n for (caller, callee), n in crossings.items() if _transport(callee) and not _transport(caller))
        print(f"{label}: {len(modules)} modules, {sum(crossings.values())} calls from one module into another, "
              f"{upward} of them upward into the transport")
        if args.detail:
            for module in sorted(modules):
                print(f"  {module}")
            for (caller, callee), count in crossings.most_common():
                print(f"  {count:4d}  {caller} -> {callee}")


if __name__ == "__main__":
    main()
