"""In-memory stores, bounded by entry count and age; safe across threads and greenlets, one process only."""

from __future__ import annotations

import copy
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from llmsim.store.base import (
    FINAL_STATUSES,
    UNSEEN_GRACE_SECONDS,
    SerializedEvent,
    StoredConversation,
    StoredResponse,
)

V = TypeVar("V")


class Bounded(Generic[V]):
    """Oldest entries are evicted first, except `pinned` ones and the one just put; `max_entries=0` keeps
    nothing, `ttl_seconds=0` never expires.

    Not locked itself: the stores hold their lock around every use.
    """

    def __init__(self, max_entries: int, ttl_seconds: float, clock: Callable[[], float],
                 pinned: Callable[[V], bool] = lambda _: False,
                 on_evict: Callable[[str, V], None] = lambda key, value: None) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._pinned = pinned
        self._on_evict = on_evict  # called for every entry that leaves: evicted, expired or popped
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def put(self, key: str, value: V) -> None:
        if self.max_entries <= 0:
            return
        self._items[key] = (self._clock(), value)
        self._items.move_to_end(key)
        self._expire()
        excess = len(self._items) - self.max_entries
        if excess > 0:
            evictable = (k for k, (_, v) in self._items.items() if k != key and not self._pinned(v))
            for old in list(itertools.islice(evictable, excess)):
                self._on_evict(old, self._items.pop(old)[1])

    def get(self, key: str) -> V | None:
        self._expire()
        entry = self._items.get(key)
        return entry[1] if entry else None

    def pop(self, key: str) -> bool:
        entry = self._items.pop(key, None)
        if entry is not None:
            self._on_evict(key, entry[1])
        return entry is not None

    def _evict_oldest(self) -> None:
        key, (_, value) = self._items.popitem(last=False)
        self._on_evict(key, value)

    def __len__(self) -> int:
        self._expire()
        return len(self._items)

    def values(self) -> list[V]:
        self._expire()
        return [value for _, value in self._items.values()]

    def _expire(self) -> None:
        if self.ttl_seconds <= 0:
            return
        horizon = self._clock() - self.ttl_seconds
        while self._items:
            stored_at, _ = next(iter(self._items.values()))
            if stored_at > horizon:
                break
            self._evict_oldest()


class MemoryStore:
    """Responses in a dict; the default store. The entry limit never evicts an unfinished (queued or running)
    response: a client told "queued" can always come back for it; nor a finished background response not yet
    read, for UNSEEN_GRACE_SECONDS (the TTL still applies)."""

    def __init__(self, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._unseen: dict[str, float] = {}  # finished background responses not read yet → until when they are kept
        self._records: Bounded[StoredResponse] = Bounded(max_entries, ttl_seconds, clock, pinned=self._pinned,
                                                         on_evict=self._unindex)
        self._stopping: set[str] = set()  # running responses asked to cancel
        self._item_index: dict[str, str] = {}  # item id → id of the newest stored response holding it
        self._lock = threading.Lock()

    def put(self, record: StoredResponse) -> None:
        with self._lock:
            self._records.put(record.id, record)
            if self._records.get(record.id) is record:  # not when the store keeps nothing
                self._index(record.id, record.items())

    def get(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            record = self._records.get(response_id)
            if record is not None and self._unseen and record.status in FINAL_STATUSES:
                self._unseen.pop(response_id, None)  # read once: evictable like any other
            return record

    def _pinned(self, record: StoredResponse) -> bool:
        return record.status not in FINAL_STATUSES or self._unseen.get(record.id, 0.0) > self._clock()

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
                self._index(response_id, record.response["output"])
                if record.status in FINAL_STATUSES:
                    self._stopping.discard(response_id)
                    if record.worker is not None:  # a background response, finished: kept until read
                        self._unseen[response_id] = self._clock() + UNSEEN_GRACE_SECONDS
            return True

    def tail(self, response_id: str, after: int) -> tuple[str, list[SerializedEvent]] | None:
        with self._lock:
            record = self._records.get(response_id)
            if record is None:
                return None
            if record.status in FINAL_STATUSES:  # its stream's reader sees it final
                self._unseen.pop(response_id, None)
            return record.status, record.stream_events()[after + 1:]

    def cancel(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            record = self._records.get(response_id)
            if record is not None and record.status == "queued":
                record.response = {**record.response, "status": "cancelled"}
            elif record is not None and record.status not in FINAL_STATUSES:
                self._stopping.add(response_id)
            return record

    def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        with self._lock:
            response_id = self._item_index.get(item_id)
            record = None if response_id is None else self._records.get(response_id)  # expires what is old
            item = None if record is None or owner is not None and record.owner != owner else record.item(item_id)
            return copy.deepcopy(item)

    def _index(self, response_id: str, items: list[dict[str, Any]]) -> None:
        for item in items:
            if item.get("id"):
                self._item_index[item["id"]] = response_id

    def _unindex(self, response_id: str, record: StoredResponse) -> None:
        self._unseen.pop(response_id, None)
        for item in record.items():
            if self._item_index.get(item.get("id", "")) == response_id:
                del self._item_index[item["id"]]


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
