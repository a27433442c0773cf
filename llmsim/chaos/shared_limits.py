"""Rate-limit buckets shared by a server's workers without Redis: a table in a file every worker maps.

With `--workers N` and the memory or SQLite store, each worker once had buckets of its own, so `--rpm 20` let
N × 20 requests through while the headers announced 20. Here the buckets live in one memory-mapped file in the
server's own temporary folder (the one its metrics use, fresh at every start), and a worker holds the file's
lock (`flock`) while it reads, decides and writes back: the same decisions as one process's, for every limit
and its headers. A decision holds the lock for a few microseconds; `time.monotonic` is the same clock in every
process of the machine.

The table is fixed: SLOTS buckets found by a hash of (API key, model, kind), each looked for within PROBE slots
of its place. A bucket that finds none free takes the place of the one used least recently there, which then
starts full again (lenient, as the in-process buckets' bound is).
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llmsim.chaos.ratelimit import Bucket, RateLimiter

FILE_NAME = "ratelimit.buckets"
SLOTS = 1 << 16
PROBE = 32
HEADER = struct.Struct("<q")  # requests refused
SLOT = struct.Struct("<16sqdd")  # key digest (zeros: free), capacity, level, last refill
EMPTY = bytes(16)
SIZE = HEADER.size + SLOTS * SLOT.size  # 2.6 MB, in a sparse file: pages are written as buckets land on them


class SharedRateLimiter(RateLimiter):
    """The buckets of every worker of a server, in the file at `path` (made by the first worker to use it)."""

    def __init__(self, path: str, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self.path = path
        self._pid = 0
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._touched: list[tuple[int, bytes, Bucket]] = []

    def _table(self) -> mmap.mmap:
        """This process's mapping: opened again after a fork, so that each worker's lock is its own."""
        if self._pid != os.getpid() or self._map is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            if os.fstat(fd).st_size < SIZE:
                os.ftruncate(fd, SIZE)  # zeros: every slot free (two workers doing this at once agree)
            self._fd, self._map, self._pid = fd, mmap.mmap(fd, SIZE), os.getpid()
        return self._map

    @contextmanager
    def _held(self) -> Iterator[None]:
        with self._lock:
            self._table()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
                table = self._map
                assert table is not None
                for index, digest, bucket in self._touched:
                    SLOT.pack_into(table, index, digest, bucket.capacity, bucket.level, bucket.updated)
            finally:
                self._touched.clear()
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _bucket(self, key: tuple[str, str], kind: str, capacity: int | None, now: float) -> Bucket | None:
        if capacity is None:
            return None
        table = self._map
        assert table is not None
        digest = hashlib.blake2b("\0".join((*key, kind)).encode(), digest_size=16).digest()
        index = self._slot(table, digest)
        found, stored, level, updated = SLOT.unpack_from(table, index)
        bucket = Bucket(capacity, now)
        if found == digest and stored == capacity:
            bucket.level, bucket.updated = level, updated
        else:  # claimed now, so that the request's next bucket finds the slot taken
            SLOT.pack_into(table, index, digest, capacity, bucket.level, now)
        bucket.refill(now)
        self._touched.append((index, digest, bucket))
        return bucket

    @staticmethod
    def _slot(table: mmap.mmap, digest: bytes) -> int:
        """The offset of `digest`'s slot: its own, else the first free one, else the least recently used."""
        start = int.from_bytes(digest[:8], "little") % SLOTS
        oldest, oldest_at = -1, float("inf")
        free = -1
        for step in range(PROBE):
            index = HEADER.size + ((start + step) % SLOTS) * SLOT.size
            found, _, _, updated = SLOT.unpack_from(table, index)
            if found == digest:
                return index
            if found == EMPTY:
                if free < 0:
                    free = index
            elif updated < oldest_at:
                oldest, oldest_at = index, updated
        return free if free >= 0 else oldest

    @property
    def rejected(self) -> int:
        with self._held():
            table = self._map
            assert table is not None
            return int(HEADER.unpack_from(table, 0)[0])

    def _refused(self) -> None:  # under `_held`
        table = self._map
        assert table is not None
        HEADER.pack_into(table, 0, HEADER.unpack_from(table, 0)[0] + 1)

    def reset(self) -> None:
        with self._held():
            table = self._map
            assert table is not None
            table[:] = bytes(SIZE)
