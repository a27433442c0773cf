"""bench/stores.py's smoke run, part (a) (tests/test_bench.py says why): the costliest bench, its two parts in two
files (part (b) in tests/test_bench_stores_pacing.py), so that `--dist loadfile` runs them side by side.
"""

from __future__ import annotations

import shutil

import pytest

from bench_kit import positive, row, smoke


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_stores_throughput() -> None:
    out = smoke("stores", "--part", "a")
    for store in ("memory", "redis", "sqlite"):
        cells = row(out, store, "1")
        assert positive([float(cells[2]), float(cells[-1])]), cells
    assert positive([float(row(out, "create (json)")[1]), float(row(out, "create (stream)")[1])])
