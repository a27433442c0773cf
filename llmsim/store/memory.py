"""In-memory stores, bounded by entry count and age; safe across threads and greenlets, one process only."""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from llmsim.store.base import FINAL_STATUSES, SerializedEvent, StoredConversation, StoredResponse

V = TypeVar("V")


class Bounded(Generic[V]):
    """Oldest entries are evicted first; `max_entries=0` keeps nothing, `ttl_seconds=0` never expires.

    Not locked itself: the stores hold their lock around every use.
    """

    def __init__(self, max_entries: int, ttl_seconds: float, clock: Callable[[], float]) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def put(self, key: str, value: V) -> None:
        if self.max_entries <= 0:
            return
        self._items[key] = (self._clock(), value)
        self._items.move_to_end(key)
        self._expire()
        while len(self._items) > self.max_entries:
            self._items.popitem(last=False)

    def get(self, key: str) -> V | None:
        self._expire()
        entry = self._items.get(key)
        return entry[1] if entry else None

    def pop(self, key: str) -> bool:
        return self._items.pop(key, None) is not None

    def __len__(self) -> int:
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


class MemoryStore:
    """Responses in a dict; the default store."""

    def __init__(self, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._records: Bounded[StoredResponse] = Bounded(max_entries, ttl_seconds, clock)
        self._stopping: set[str] = set()  # running responses asked to cancel
        self._lock = threading.Lock()

    def put(self, record: StoredResponse) -> None:
        with self._lock:
            self._records.put(record.id, record)

    def get(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            return self._records.get(response_id)

    def delete(self, response_id: str) -> bool:
        with self._lock:
            return self._records.pop(response_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def append(self, response_id: str, events: list[SerializedEvent], response: dict[str, Any] | None = None,
               *, force: bool = False) -> bool:
        with self._lock:
            record = self._records.get(response_id)
            if record is None or (not force and (record.status == "cancelled" or response_id in self._stopping)):
                return False
            record.events.extend(events)
            if response is not None:
                record.response = copy.deepcopy(response)  # the caller goes on changing its own
                if record.status in FINAL_STATUSES:
                    self._stopping.discard(response_id)
            return True

    def tail(self, response_id: str, after: int) -> tuple[str, list[SerializedEvent]] | None:
        with self._lock:
            record = self._records.get(response_id)
            return None if record is None else (record.status, record.stream_events()[after + 1:])

    def cancel(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            record = self._records.get(response_id)
            if record is not None and record.status == "queued":
                record.response = {**record.response, "status": "cancelled"}
            elif record is not None and record.status not in FINAL_STATUSES:
                self._stopping.add(response_id)
            return record


class MemoryConversations:
    """Conversations in a dict, each with its list of items."""

    def __init__(self, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: Bounded[tuple[StoredConversation, list[dict[str, Any]]]] = Bounded(
            max_entries, ttl_seconds, clock)
        self._lock = threading.Lock()

    def create(self, conversation: StoredConversation, items: list[dict[str, Any]]) -> None:
        with self._lock:
            self._entries.put(conversation.id, (conversation, copy.deepcopy(items)))

    def get(self, conversation_id: str) -> StoredConversation | None:
        with self._lock:
            entry = self._entries.get(conversation_id)
            return entry[0] if entry else None

    def set_metadata(self, conversation_id: str, metadata: dict[str, str]) -> StoredConversation | None:
        with self._lock:
            entry = self._entries.get(conversation_id)
            if entry is None:
                return None
            entry[0].metadata = dict(metadata)
            self._entries.put(conversation_id, entry)
            return entry[0]

    def delete(self, conversation_id: str) -> bool:
        with self._lock:
            return self._entries.pop(conversation_id)

    def add_items(self, conversation_id: str, items: list[dict[str, Any]]) -> bool:
        with self._lock:
            entry = self._entries.get(conversation_id)
            if entry is None:
                return False
            entry[1].extend(copy.deepcopy(items))
            self._entries.put(conversation_id, entry)
            return True

    def items(self, conversation_id: str) -> list[dict[str, Any]] | None:
        with self._lock:
            entry = self._entries.get(conversation_id)
            return None if entry is None else copy.deepcopy(entry[1])

    def delete_item(self, conversation_id: str, item_id: str) -> bool:
        with self._lock:
            entry = self._entries.get(conversation_id)
            if entry is None:
                return False
            kept = [item for item in entry[1] if item.get("id") != item_id]
            found = len(kept) < len(entry[1])
            entry[1][:] = kept
            return found

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
