"""What measuring requests at the edge costs: the same streamed responses with and without their Meter.

    python -m bench.meter

Runs the metrics in prometheus-client's multiprocess mode (files, as under the server) and drains STREAMS
streamed Responses (sim backend, speed 0, a fixed seed) through the pipeline and SSE framing, with the
chaos gate's plain Admission and with one that carries a Meter, alternating rounds. Prints the time per
event of both, the meter's share, and the ratio against the goal (the meter adds under 10%). Best of
ROUNDS: on a shared machine the least disturbed round is the truest.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # `python bench/meter.py`: the repository's root on the path, as for `-m bench.meter`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import parse, smoke  # noqa: E402

STREAMS = 40
ROUNDS = 9
GOAL = 1.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=STREAMS, help="streamed responses per round")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of each kind; the best counts")
    smoke(parser, streams=3, rounds=2)
    args = parse(parser)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="llmsim-bench-metrics-")
    from llmsim import orchestrate
    from llmsim.api.sse import frames
    from llmsim.backends import load_backend, load_models
    from llmsim.chaos.admission import Gate
    from llmsim.chaos.faults import Admission
    from llmsim.config import Settings
    from llmsim.generation import Prompt
    from llmsim.metrics.meter import Meter
    from llmsim.metrics.registry import Metrics
    from llmsim.pipeline import Pipeline
    from llmsim.request import ApiRequest
    from llmsim.responses.create import Create
    from llmsim.responses.surface import RESPONSES
    from llmsim.store import MemoryStore
    from llmsim.surface import Surface

    settings = Settings(speed=0.0, seed=7)
    backend = load_backend(settings)
    catalog = load_models(backend, settings)
    metrics = Metrics()
    body = {"model": "gpt-4o", "input": "Tell me about the sea.", "stream": True, "max_output_tokens": 600}

    class Fixed(Gate):
        """The gate every request passes, answering with the bench's own Admission."""

        def __init__(self, admission: Callable[[Prompt, bool], Admission]) -> None:
            super().__init__()
            self.admission = admission

        def check_limits_and_faults(self, _surface: Surface, prompt: Prompt, _request: ApiRequest, stream: bool,
                                    _whole: bool = False) -> Admission:
            return self.admission(prompt, stream)

    def metered_admission(prompt: Prompt, stream: bool) -> Admission:
        return Admission(meter=Meter(metrics, prompt.profile.id, stream=stream, input_tokens=prompt.input_tokens,
                                     pricing=prompt.profile.pricing))

    plain = Pipeline(catalog, backend, MemoryStore(), seed=7, gate=Fixed(lambda _prompt, _stream: Admission()))
    metered = Pipeline(catalog, backend, MemoryStore(), seed=7, gate=Fixed(metered_admission))

    def drain(pipeline: Pipeline) -> tuple[float, int]:
        events = 0
        start = time.perf_counter()
        for _ in range(args.streams):
            answer = orchestrate.create(pipeline, Create(RESPONSES, paced_runs=False), ApiRequest(body))
            for _ in frames(answer.events or iter(())):
                events += 1
        return time.perf_counter() - start, events

    drain(metered)  # warm-up: tokenizer, label children, metric files
    bare, measured = [], []
    for _ in range(args.rounds):
        seconds, events = drain(plain)
        bare.append(seconds / events)
        seconds, events = drain(metered)
        measured.append(seconds / events)
    bare_us, measured_us = min(bare) * 1e6, min(measured) * 1e6
    ratio = measured_us / bare_us
    print(f"{args.streams} streamed responses of ~{events // args.streams} events, best of {args.rounds} rounds")
    print(f"pipeline + SSE framing:         {bare_us:6.2f} us/event")
    print(f"the same, measured at the edge: {measured_us:6.2f} us/event")
    print(f"ratio measured / bare:          {ratio:6.3f}   goal <= {GOAL}: {'met' if ratio <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
