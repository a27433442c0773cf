"""In-memory response store, bounded by entry count and age; safe across threads and greenlets."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from llmsim.store.base import StoredResponse


class MemoryStore:
    """Oldest entries are evicted first; `max_entries=0` stores nothing, `ttl_seconds=0` never expires."""

    def __init__(self, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, StoredResponse]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, record: StoredResponse) -> None:
        if self.max_entries <= 0:
            return
        with self._lock:
            self._items[record.id] = (self._clock(), record)
            self._items.move_to_end(record.id)
            self._expire()
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def get(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            self._expire()
            entry = self._items.get(response_id)
            return entry[1] if entry else None

    def delete(self, response_id: str) -> bool:
        with self._lock:
            return self._items.pop(response_id, None) is not None

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._items)

    def _expire(self) -> None:
        if self.ttl_seconds <= 0:
            return
        horizon = self._clock() - self.ttl_seconds
        while self._items:
            stored_at, _ = next(iter(self._items.values()))
            if stored_at > horizon:
                break
            self._items.popitem(last=False)
