"""Requests at speed 0 take turns: a long answer does not hold up a short one in the same worker."""

from __future__ import annotations

import threading
import time

import httpx

from llmsim.pytest_plugin import LLMSim

LONG = "word " * 400_000  # a long answer at speed 0 still takes the worker a while (~0.3 s, most of it tokenizing)


def test_a_long_answer_does_not_hold_up_a_short_one(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"rules": [{"match": {"input_contains": "LONG"}, "text": LONG}], "on_exhausted": "simulate"})
    url = f"{llmsim.base_url}/responses"
    finished: dict[str, float] = {}

    def ask(name: str, text: str) -> None:
        answer = httpx.post(url, json={"model": "gpt-4o", "input": text}, timeout=120)
        assert answer.status_code == 200
        finished[name] = time.monotonic()

    long = threading.Thread(target=ask, args=("long", "LONG please"))
    long.start()
    time.sleep(0.05)  # the long answer is being generated
    ask("short", "hi")
    long.join()
    assert finished["short"] < finished["long"]
