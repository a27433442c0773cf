"""bench/stores.py's smoke run (tests/test_bench.py says why), both parts in one run: (a)'s Redis server of one
worker paces (b)'s streams after, a server start fewer than a run per part, and one Redis and one bench process.
"""

from __future__ import annotations

import shutil

import pytest

from bench_kit import NUMBER, figures, positive, row, smoke

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")


@pytest.fixture(scope="module")
def out() -> str:
    return smoke("stores")


def test_stores_throughput(out: str) -> None:
    for store in ("memory", "redis", "sqlite"):
        cells = row(out, store, "1")
        assert positive([float(cells[2]), float(cells[-1])]), cells
    assert positive([float(row(out, "create (json)")[1]), float(row(out, "create (stream)")[1])])


def test_stores_pacing(out: str) -> None:
    """(b): paced streams on Redis at one and four workers, the floor, the capacity."""
    assert positive(figures(r"four workers: (" + NUMBER + ")x one", out))
    assert positive(figures(r"the floor's four workers: (" + NUMBER + ")x one", out))
    cells = row(out, "1", "20")  # the capacity table: one worker, 20 streams
    assert positive([float(cells[2])]), cells
