"""bench/stores.py's smoke run (tests/test_bench.py says why): a file of its own, the costliest, so that
`--dist loadfile` gives it a worker of its own.
"""

from __future__ import annotations

import shutil

import pytest

from bench_kit import NUMBER, figures, positive, row, smoke


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_stores() -> None:
    out = smoke("stores")
    for store in ("memory", "redis", "sqlite"):
        cells = row(out, store, "1")
        assert positive([float(cells[2]), float(cells[-1])]), cells
    assert positive([float(row(out, "create (json)")[1]), float(row(out, "create (stream)")[1])])
    assert positive(figures(r"four workers: (" + NUMBER + ")x one", out))
    assert positive(figures(r"the floor's four workers: (" + NUMBER + ")x one", out))
    cells = row(out, "1", "20")  # the capacity table: one worker, 20 streams
    assert positive([float(cells[2])]), cells
