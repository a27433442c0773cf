"""A request's random source: its own, seeded, when its draws must repeat; else the worker's, shared.

Seeding a Mersenne Twister is the cost of a few hundred draws (from os.urandom, about 14 µs; from a number or
string, about 5 µs), paid per request and per use (the answer's text, its pacing, Faker) for draws nothing asks
to repeat when the request has no seed. Those take the worker's generator, reseeded in each forked process so
that workers do not draw alike.
"""

from __future__ import annotations

import os
import random

_shared = random.Random()
os.register_at_fork(after_in_child=_shared.seed)


def for_request(seed: int | str | None) -> random.Random:
    """A generator seeded with `seed`, or (None) the worker's shared one."""
    return _shared if seed is None else random.Random(seed)


def shared(rng: random.Random) -> bool:
    """Whether `rng` is the worker's shared generator: its draws need not repeat, so what it seeds need not be."""
    return rng is _shared
