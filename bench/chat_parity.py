"""Chat Completions against the Responses API on the same answer: CPU per request, in process, interleaved.

The same prompt, model, seed and output limit go to `POST /v1/chat/completions` and `POST /v1/responses` (Flask's
test client, the sim backend, speed 0), as JSON and as streams; both answers' text is checked to be the same.
Short windows of each kind alternate, so the machine's drift hits both alike; a ratio is the median of the ratios
of windows taken next to each other. The goal (issue 41): Chat Completions serves at least 0.9x the requests per
CPU second that Responses does, for JSON and for streams.

    python -m bench.chat_parity            # JSON and streams, the ratios against the goal
    python -m bench.chat_parity --smoke    # each part briefly
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/chat_parity.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import goal, machine, parse, smoke  # noqa: E402

GOAL = 0.9
PROMPT = "Tell me about the sea, in some detail."
MODEL = "gpt-4o"
TOKENS = 300


def bodies(stream: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    chat = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}], "max_completion_tokens": TOKENS}
    responses = {"model": MODEL, "input": PROMPT, "max_output_tokens": TOKENS}
    if stream:
        chat["stream"] = responses["stream"] = True
    return chat, responses


def text_of(path: str, data: bytes, stream: bool) -> str:
    """The answer's text, whatever its shape."""
    if not stream:
        body = json.loads(data)
        if path.endswith("chat/completions"):
            return str(body["choices"][0]["message"]["content"])
        return "".join(part["text"] for item in body["output"] if item["type"] == "message"
                       for part in item["content"] if part["type"] == "output_text")
    text = []
    for line in data.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if path.endswith("chat/completions"):
            text += [c["delta"].get("content") or "" for c in event.get("choices", [])]
        elif event.get("type") == "response.output_text.delta":
            text.append(event["delta"])
    return "".join(text)


def window(client: Any, path: str, body: dict[str, Any], requests: int) -> float:
    """CPU seconds per request over `requests` requests, each answer read whole."""
    started = time.process_time()
    for _ in range(requests):
        response = client.post(path, json=body)
        response.get_data()
        assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return (time.process_time() - started) / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15, help="window pairs per part")
    parser.add_argument("--requests", type=int, default=40, help="requests per window")
    smoke(parser, rounds=2, requests=3)
    args = parse(parser)
    from llmsim.app import create_app
    from llmsim.config import Settings

    client = create_app(Settings(speed=0.0, seed=7)).test_client()
    print(machine())
    chat_path, responses_path = "/v1/chat/completions", "/v1/responses"
    for label, stream in (("JSON", False), ("stream", True)):
        chat, responses = bodies(stream)
        answers = {path: text_of(path, client.post(path, json=body).get_data(), stream)  # warm, and the same?
                   for path, body in ((chat_path, chat), (responses_path, responses))}
        same = answers[chat_path] == answers[responses_path]
        assert answers[chat_path], "no text in the chat answer"
        ratios, chat_ms, responses_ms = [], [], []
        for _ in range(args.rounds):
            spent_chat = window(client, chat_path, chat, args.requests)
            spent_responses = window(client, responses_path, responses, args.requests)
            chat_ms.append(spent_chat * 1000)
            responses_ms.append(spent_responses * 1000)
            ratios.append(spent_responses / spent_chat)  # chat's requests per CPU second over Responses'
        print(f"{label}: chat {statistics.median(chat_ms):.2f} ms, responses {statistics.median(responses_ms):.2f} ms "
              f"of CPU per request (medians of {args.rounds} windows of {args.requests}); the same answer: "
              f"{'yes' if same else 'NO'} ({len(answers[chat_path])} characters)")
        print("  " + goal(f"{label}: chat / responses requests per CPU second", statistics.median(ratios), GOAL))
    print(machine())


if __name__ == "__main__":
    main()
