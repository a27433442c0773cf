"""Requests at speed 0 take turns: a long answer does not hold up a short one in the same worker, nor does a
connection whose requests are already waiting (pipelined, or sent as each answer arrives) hold up the others."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

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


def test_a_connection_with_requests_waiting_does_not_hold_up_the_others(llmsim: LLMSim) -> None:
    """Pipelined requests are read from the worker's buffer without a wait on the socket: without a turn between
    them, the worker answers all of them before another connection's request."""
    url = urlsplit(llmsim.base_url)
    address = (url.hostname or "127.0.0.1", url.port or 80)
    request = f"GET /llmsim/missing HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode()  # a small 404, no work
    busy, other = socket.create_connection(address), socket.create_connection(address)
    try:
        busy.sendall(request * 2000)
        other.sendall(request.replace(b"HTTP/1.1", b"HTTP/1.0"))  # answered, then closed
        other.settimeout(30)
        while other.recv(65536):
            pass
        busy.settimeout(0.0)
        answered = b""
        try:
            while chunk := busy.recv(1 << 20):
                answered += chunk
        except BlockingIOError:
            pass
        assert answered.count(b"HTTP/1.1 404") < 1000  # the other connection had its turn long before the last
    finally:
        busy.close()
        other.close()
