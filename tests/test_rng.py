"""A request's random source: seeded ones repeat, unseeded ones share the worker's generator, reseeded per fork."""

from __future__ import annotations

import os

from llmsim import rng


def test_a_seeded_request_gets_its_own_generator_and_an_unseeded_one_the_workers() -> None:
    first, again = rng.for_request(7), rng.for_request(7)
    assert first is not again and [first.random() for _ in range(3)] == [again.random() for _ in range(3)]
    assert rng.for_request("llmsim-pacing:7").random() != rng.for_request(7).random()
    assert rng.for_request(None) is rng.for_request(None)
    assert rng.shared(rng.for_request(None)) and not rng.shared(rng.for_request(7))


def test_each_forked_worker_draws_its_own_values() -> None:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a gunicorn worker is forked from the master like this
        os.write(write, repr(rng.for_request(None).random()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        drawn_in_child = float(pipe.read())
    assert drawn_in_child != rng.for_request(None).random()
