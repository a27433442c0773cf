"""Uploaded files and batch jobs: records of JSON fields, a file's bytes, a job's result lines, by kind and id.

One interface over memory, SQLite (llmsim/store/objects_sqlite.py) and Redis (llmsim/store/objects_redis.py), so
the job runner (llmsim/jobs/runner.py) and the routes know no store. A record's fields change by merging
(`update`), so a cancel and the runner's progress never overwrite each other's fields; `claim` hands a job to one
process. The same entry and TTL limits as responses apply, to each kind on its own; an unfinished job (`pinned`)
is never evicted.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from llmsim.store.memory import Bounded

OPENAI_FILE, ANTHROPIC_FILE = "file", "anthropic_file"  # the kinds of uploaded files, one per provider
PINNED = "_running"  # a record with this field true stays past the entry limit (a job not finished)


@dataclass
class Stored:
    """One file or job: its fields (the public object's and the runner's own), whose scope it is in, when made."""

    kind: str
    id: str
    owner: str
    fields: dict[str, Any]
    created: float = field(default_factory=time.time)


class ObjectStore(Protocol):
    def put(self, record: Stored, content: bytes | None = None) -> None: ...

    def get(self, kind: str, object_id: str) -> Stored | None: ...

    def update(self, kind: str, object_id: str, changes: dict[str, Any]) -> Stored | None:
        """Merge `changes` into the record's fields, atomically; None when it is gone."""
        ...

    def claim(self, kind: str, object_id: str, name: str, expected: Any, value: Any) -> bool:
        """Set field `name` to `value` only if it is `expected` now (a job adopted by one process only)."""
        ...

    def content(self, kind: str, object_id: str) -> bytes | None: ...

    def delete(self, kind: str, object_id: str) -> bool: ...

    def listed(self, kind: str, owner: str | None) -> list[Stored]:
        """Every record of a kind (in one scope; None: all), newest first."""
        ...

    def add_line(self, kind: str, object_id: str, index: int, line: str) -> None:
        """A job's result for its input line `index` (kept once: the first result of a line stands)."""
        ...

    def lines(self, kind: str, object_id: str) -> dict[int, str]: ...


Entry = tuple[Stored, "bytes | None", dict[int, str]]  # a record, its bytes, its result lines


class MemoryObjects:
    """Files and jobs in dicts, bounded like the memory store's responses."""

    def __init__(self, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._make = lambda: Bounded[Entry](max_entries, ttl_seconds, clock,
                                            pinned=lambda entry: bool(entry[0].fields.get(PINNED)))
        self._kinds: dict[str, Bounded[Entry]] = {}  # each kind bounded on its own, as in SQLite and Redis
        self._lock = threading.Lock()

    def _of(self, kind: str) -> Bounded[Entry]:
        found = self._kinds.get(kind)
        if found is None:
            found = self._kinds[kind] = self._make()
        return found

    def put(self, record: Stored, content: bytes | None = None) -> None:
        with self._lock:
            self._of(record.kind).put(record.id, (copy.deepcopy(record), content, {}))

    def get(self, kind: str, object_id: str) -> Stored | None:
        with self._lock:
            entry = self._of(kind).get(object_id)
            return None if entry is None else copy.deepcopy(entry[0])

    def update(self, kind: str, object_id: str, changes: dict[str, Any]) -> Stored | None:
        with self._lock:
            entry = self._of(kind).get(object_id)
            if entry is None:
                return None
            entry[0].fields.update(copy.deepcopy(changes))
            return copy.deepcopy(entry[0])

    def claim(self, kind: str, object_id: str, name: str, expected: Any, value: Any) -> bool:
        with self._lock:
            entry = self._of(kind).get(object_id)
            if entry is None or entry[0].fields.get(name) != expected:
                return False
            entry[0].fields[name] = value
            return True

    def content(self, kind: str, object_id: str) -> bytes | None:
        with self._lock:
            entry = self._of(kind).get(object_id)
            return None if entry is None else entry[1]

    def delete(self, kind: str, object_id: str) -> bool:
        with self._lock:
            return self._of(kind).pop(object_id)

    def listed(self, kind: str, owner: str | None) -> list[Stored]:
        with self._lock:
            found = [copy.deepcopy(entry[0]) for entry in self._of(kind).values()
                     if owner is None or entry[0].owner == owner]
        return sorted(found, key=lambda record: record.created, reverse=True)

    def add_line(self, kind: str, object_id: str, index: int, line: str) -> None:
        with self._lock:
            entry = self._of(kind).get(object_id)
            if entry is not None:
                entry[2].setdefault(index, line)

    def lines(self, kind: str, object_id: str) -> dict[int, str]:
        with self._lock:
            entry = self._of(kind).get(object_id)
            return {} if entry is None else dict(entry[2])
