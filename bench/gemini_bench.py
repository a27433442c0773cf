"""`python -m bench.gemini_bench`: Gemini API streams per core against Responses streams per core at speed 0, on the
same answer, and embeddings requests per core against JSON Responses requests per core, in one run.

One server (one worker) answers every surface from one scenario (the same text, so the backend's work is the
same); concurrent clients stream from one surface at a time, rounds alternating, and the server's CPU seconds in
each window give requests per CPU-second: requests per core. A ratio is the median of the ratios of windows taken
next to each other. Goals: Gemini streams per core >= 0.9x Responses' (`streamGenerateContent?alt=sse`); an
embeddings request of a paragraph (OpenAI's `/v1/embeddings`, 1536 floats; Gemini's `embedContent`, 768) costs no
more than a JSON Responses request: requests per core >= 1x. A batch of 16 paragraphs is shown beside them.
"""

from __future__ import annotations

import argparse
import statistics

from bench.closed_loop import alternating, scripted_server
from bench.common import goal, machine, parse, smoke, table

ANSWER = " ".join(["Streams carry the same words on either surface, one delta at a time."] * 12)
PARAGRAPH = ("Retrieval-augmented generation finds the documents that answer a question by comparing their "
             "embeddings with the question's, then hands the best ones to the model with the question. ") * 2
QUESTION = "Tell me about streams."
BATCH = 16  # paragraphs in the batched request
# name → (path, body, what the answer must hold)
LOADS: dict[str, tuple[str, dict[str, object], bytes]] = {
    "responses stream": ("/v1/responses", {"model": "gpt-4o", "input": QUESTION, "stream": True},
                         b"response.completed"),
    "gemini stream": ("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
                      {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]}, b'"finishReason"'),
    "responses JSON": ("/v1/responses", {"model": "gpt-4o", "input": QUESTION}, b'"status":"completed"'),
    "openai embeddings": ("/v1/embeddings", {"model": "text-embedding-3-small", "input": PARAGRAPH,
                                             "encoding_format": "float"}, b'"usage"'),
    "gemini embeddings": ("/v1beta/models/text-embedding-004:embedContent",
                          {"content": {"parts": [{"text": PARAGRAPH}]}}, b'"embedding"'),
    f"openai embeddings x{BATCH}": ("/v1/embeddings", {"model": "text-embedding-3-small",
                                                       "input": [PARAGRAPH] * BATCH}, b'"usage"'),
}
PAIRS = (("gemini stream", "responses stream", 0.9), ("openai embeddings", "responses JSON", 1.0),
         ("gemini embeddings", "responses JSON", 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=3.0, help="each window")
    parser.add_argument("--rounds", type=int, default=3, help="windows per load, alternating")
    smoke(parser, seconds=0.15, rounds=1, clients=4)  # a few dozen requests a window, 12 windows
    args = parse(parser)
    with scripted_server(ANSWER) as server:
        results = alternating(server, LOADS, args.clients, args.seconds, args.rounds)
    print(f"speed 0, {args.clients} clients, {args.rounds} x {args.seconds:g} s windows per load, one worker; "
          f"{machine()}")
    rows = [[load, f"{statistics.median(w[0] for w in windows):.0f}", f"{statistics.median(w[1] for w in windows):.0f}"]
            for load, windows in results.items()]
    print(table(["load", "requests per core (per CPU-second)", "requests per second"], rows))
    for load, against, target in PAIRS:
        ratio = statistics.median(a[0] / b[0] for a, b in zip(results[load], results[against], strict=True))
        print(f"ratio {load} / {against}: {ratio:.2f}x")
        print(goal(f"{load} per core against {against}", ratio, target))


if __name__ == "__main__":
    main()
