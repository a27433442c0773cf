"""SQLite stores: survive restarts and kill -9, and are shared by every worker process of the server.

WAL mode lets readers run while one process writes; every change is one `BEGIN IMMEDIATE`
transaction, so a completed response is either wholly on disk or not at all. Nothing is
cached in the process: each read goes to the database, so no worker ever sees stale state.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llmsim.store.base import (
    FINAL_STATUSES,
    UNSEEN_GRACE_SECONDS,
    SerializedEvent,
    StorageUnavailable,
    StoredConversation,
    StoredResponse,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY, stored_at REAL NOT NULL, status TEXT NOT NULL,
    response TEXT NOT NULL, input_items TEXT NOT NULL, history TEXT NOT NULL,
    stopping INTEGER NOT NULL DEFAULT 0, worker TEXT, owner TEXT NOT NULL DEFAULT '', unseen_until REAL);
CREATE INDEX IF NOT EXISTS responses_by_age ON responses (stored_at);
CREATE TABLE IF NOT EXISTS events (
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (response_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS items (
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, item TEXT NOT NULL,
    PRIMARY KEY (response_id, item_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_by_id ON items (item_id);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, stored_at REAL NOT NULL, created_at INTEGER NOT NULL, metadata TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS conversations_by_age ON conversations (stored_at);
CREATE TABLE IF NOT EXISTS conversation_items (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, item TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS items_by_conversation ON conversation_items (conversation_id, position);
CREATE TABLE IF NOT EXISTS llmsim_health (id INTEGER PRIMARY KEY, checked_at REAL NOT NULL);
"""
# Columns added since the first schema: a database made before them gains them on open.
ADDED_COLUMNS = {"responses": {"owner": "TEXT NOT NULL DEFAULT ''", "unseen_until": "REAL"},
                 "conversations": {"owner": "TEXT NOT NULL DEFAULT ''"}}


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


FULL = "disk full"
REGAINED = 64 * 1024  # bytes: with twice the space free a write failed in, and this much more, there is room again


class Database:
    """One connection per process, used under a lock (greenlet-aware once gevent has patched threading).

    It watches its disk's space for /llmsim/health: a write that failed for space (SQLite's SQLITE_FULL, which is
    how it reports ENOSPC) marks the store full until room is made (the health probe's own small write may still
    fit where a response did not): `min_free_bytes` free, or twice what was free then and REGAINED more. Under
    `min_free_bytes` free the disk is reported low before any write fails. The mark is this process's; the free
    space is every worker's to read."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 30.0, min_free_bytes: int = 0) -> None:
        self.path = str(path)
        self.min_free_bytes = min_free_bytes
        self.full_since: float | None = None  # when a write last failed for space
        self.free_then = 0  # ... and the bytes free then
        self._lock = threading.Lock()
        with _unavailable():
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # durable against a killed process; WAL makes it cheap
            self._conn.execute("PRAGMA foreign_keys=ON")
        with self.write() as conn:
            for statement in SCHEMA.split(";"):  # not executescript: it would commit the transaction early
                conn.execute(statement)
            for table, columns in ADDED_COLUMNS.items():
                present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                for name, declaration in columns.items():
                    if name not in present:
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: taken at once (no upgrade deadlocks between processes), committed or rolled back.
        A failure of the storage itself is StorageUnavailable, with its cause."""
        with self._lock, self._watched(), _unavailable():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:  # a full disk may have ended it already
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextmanager
    def _watched(self) -> Iterator[None]:
        try:
            yield
        except StorageUnavailable as error:
            if error.cause == FULL:
                self.full_since, self.free_then = time.time(), self._free() or 0
            raise

    def _free(self) -> int | None:
        try:
            return shutil.disk_usage(os.path.dirname(os.path.abspath(self.path))).free
        except OSError:
            return None

    def space(self) -> dict[str, Any]:
        """The disk as /llmsim/health reports it: free bytes (None when unknown), the threshold, whether it is
        under it, and when a write failed for space with no room made since (else None)."""
        free = self._free()
        low = free is not None and free < self.min_free_bytes
        if self.full_since is not None and free is not None and \
                (not low or free >= 2 * self.free_then + REGAINED):
            self.full_since = None  # room was made since
        return {"free_bytes": free, "min_free_bytes": self.min_free_bytes, "low_space": low,
                "write_failed_for_space_at": self.full_since}

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot for several queries."""
        with self._lock, _unavailable():
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

    def check(self) -> None:
        """Raise StorageUnavailable unless a write reaches the file now (a row of its own, rewritten): what
        /llmsim/health and the start-up check ask."""
        with self.write() as conn:
            conn.execute("INSERT OR REPLACE INTO llmsim_health (id, checked_at) VALUES (1, ?)", (time.time(),))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# SQLite's primary result codes that mean the storage, not the request, failed → the cause a client is told.
_CAUSES = {sqlite3.SQLITE_FULL: FULL, sqlite3.SQLITE_READONLY: "read-only", sqlite3.SQLITE_BUSY: "locked",
           sqlite3.SQLITE_LOCKED: "locked", sqlite3.SQLITE_IOERR: "I/O error", sqlite3.SQLITE_CANTOPEN: "cannot open",
           sqlite3.SQLITE_PERM: "read-only"}


@contextmanager
def _unavailable() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as error:
        cause = _CAUSES.get(getattr(error, "sqlite_errorcode", -1) & 0xFF)
        if cause is None:
            raise
        raise StorageUnavailable(cause, str(error)) from error


class _Limits:
    """The memory stores' bounds, as SQL: entries past `max_entries` (the oldest `evictable` ones) and older
    than the TTL go."""

    def __init__(self, table: str, max_entries: int, ttl_seconds: float, clock: Callable[[], float],
                 evictable: str = "1") -> None:
        self.table = table
        self.evictable = evictable  # an SQL condition
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.clock = clock

    def horizon(self) -> float:
        return self.clock() - self.ttl_seconds if self.ttl_seconds > 0 else float("-inf")

    def enforce(self, conn: sqlite3.Connection, kept: str) -> None:
        """Apply the limits after `kept` was written; it stays, like the memory store's newest entry."""
        if self.ttl_seconds > 0:
            conn.execute(f"DELETE FROM {self.table} WHERE stored_at <= ?", (self.horizon(),))
        conn.execute(f"DELETE FROM {self.table} WHERE id IN (SELECT id FROM {self.table} WHERE {self.evictable} "
                     f"AND id != :kept ORDER BY stored_at, rowid "
                     f"LIMIT max(0, (SELECT COUNT(*) FROM {self.table}) - :max))",
                     {"kept": kept, "max": self.max_entries, "now": self.clock()})


class SQLiteStore:
    """Responses and their stream events in SQLite."""

    def __init__(self, db: Database, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        finished = ", ".join(f"'{status}'" for status in sorted(FINAL_STATUSES))
        # unfinished responses stay, and finished background ones not yet read (see UNSEEN_GRACE_SECONDS)
        self.limits = _Limits("responses", max_entries, ttl_seconds, clock,
                              evictable=f"status IN ({finished}) AND (unseen_until IS NULL OR unseen_until < :now)")

    def check(self) -> None:
        """StorageUnavailable unless the file takes a write now (/llmsim/health)."""
        self.db.check()

    def space(self) -> dict[str, Any]:
        """The disk's space as /llmsim/health reports it (Database.space)."""
        return self.db.space()

    def put(self, record: StoredResponse) -> None:
        if self.limits.max_entries <= 0:
            return
        with self.db.write() as conn:
            conn.execute("DELETE FROM responses WHERE id = ?", (record.id,))
            conn.execute("INSERT INTO responses (id, stored_at, status, response, input_items, history, worker, owner)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (record.id, self.limits.clock(), record.status, _dumps(record.response),
                          _dumps(record.input_items), _dumps(record.history), record.worker, record.owner))
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?)",  # kept as text: any process may replay
                             [(record.id, seq, kind, data)
                              for seq, (kind, data) in enumerate(record.stream_events())])
            self._index(conn, record.id, record.items())
            self.limits.enforce(conn, record.id)

    def get(self, response_id: str) -> StoredResponse | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT response, input_items, history, worker, owner, unseen_until FROM responses "
                               "WHERE id = ? AND stored_at > ?", (response_id, self.limits.horizon())).fetchone()
            if row is None:
                return None
            events = conn.execute("SELECT type, data FROM events WHERE response_id = ? ORDER BY seq",
                                  (response_id,)).fetchall()
        if row[5] is not None:
            self._seen(response_id)
        return StoredResponse(json.loads(row[0]), json.loads(row[1]), json.loads(row[2]), [tuple(e) for e in events],
                              row[3], row[4])

    def _seen(self, response_id: str) -> None:
        """A finished background response was read: evictable like any other from now on."""
        with self.db.write() as conn:
            conn.execute("UPDATE responses SET unseen_until = NULL WHERE id = ? AND status IN "
                         f"({', '.join(repr(s) for s in sorted(FINAL_STATUSES))})", (response_id,))

    def delete(self, response_id: str) -> bool:
        with self.db.write() as conn:
            return conn.execute("DELETE FROM responses WHERE id = ?", (response_id,)).rowcount > 0

    def __len__(self) -> int:
        with self.db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses WHERE stored_at > ?",
                                    (self.limits.horizon(),)).fetchone()[0])

    def append(self, response_id: str, events: list[SerializedEvent], response: dict[str, Any] | None = None,
               *, force: bool = False) -> bool:
        with self.db.write() as conn:
            row = conn.execute("SELECT status, stopping FROM responses WHERE id = ?", (response_id,)).fetchone()
            if row is None or (not force and (row[0] == "cancelled" or row[1])):
                return False
            start = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM events WHERE response_id = ?",
                                 (response_id,)).fetchone()[0]
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?)",
                             [(response_id, start + i, kind, data) for i, (kind, data) in enumerate(events)])
            if response is not None:
                final = response["status"] in FINAL_STATUSES  # a background response, finished: kept until read
                conn.execute("UPDATE responses SET status = ?, response = ?, unseen_until = CASE WHEN ? AND "
                             "worker IS NOT NULL THEN ? END WHERE id = ?",
                             (response["status"], _dumps(response), final,
                              self.limits.clock() + UNSEEN_GRACE_SECONDS, response_id))
                self._index(conn, response_id, response["output"])
            return True

    def tail(self, response_id: str, after: int) -> tuple[str, list[SerializedEvent]] | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT status, unseen_until FROM responses WHERE id = ? AND stored_at > ?",
                               (response_id, self.limits.horizon())).fetchone()
            if row is None:
                return None
            events = conn.execute("SELECT type, data FROM events WHERE response_id = ? AND seq > ? ORDER BY seq",
                                  (response_id, after)).fetchall()
        if row[1] is not None and row[0] in FINAL_STATUSES:  # its stream's reader sees it final
            self._seen(response_id)
        return row[0], [tuple(e) for e in events]

    def cancel(self, response_id: str) -> StoredResponse | None:
        with self.db.write() as conn:
            row = conn.execute("SELECT status, response FROM responses WHERE id = ?", (response_id,)).fetchone()
            if row is not None and row[0] == "queued":
                response = {**json.loads(row[1]), "status": "cancelled"}
                conn.execute("UPDATE responses SET status = 'cancelled', response = ? WHERE id = ?",
                             (_dumps(response), response_id))
            elif row is not None and row[0] not in FINAL_STATUSES:
                conn.execute("UPDATE responses SET stopping = 1 WHERE id = ?", (response_id,))
        return self.get(response_id)

    def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT items.item FROM items JOIN responses ON responses.id = items.response_id "
                               "WHERE items.item_id = ? AND responses.stored_at > ? AND (? IS NULL OR owner = ?) "
                               "ORDER BY responses.stored_at DESC LIMIT 1",
                               (item_id, self.limits.horizon(), owner, owner)).fetchone()
        return None if row is None else json.loads(row[0])

    @staticmethod
    def _index(conn: sqlite3.Connection, response_id: str, items: list[dict[str, Any]]) -> None:
        conn.executemany("INSERT OR REPLACE INTO items VALUES (?, ?, ?)",
                         [(response_id, item["id"], _dumps(item)) for item in items if item.get("id")])


class SQLiteConversations:
    """Conversations and their items in SQLite; items keep their insertion order."""

    def __init__(self, db: Database, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.limits = _Limits("conversations", max_entries, ttl_seconds, clock)

    def create(self, conversation: StoredConversation, items: list[dict[str, Any]]) -> None:
        if self.limits.max_entries <= 0:
            return
        with self.db.write() as conn:
            conn.execute("INSERT INTO conversations (id, stored_at, created_at, metadata, owner) "
                         "VALUES (?, ?, ?, ?, ?)",
                         (conversation.id, self.limits.clock(), conversation.created_at, _dumps(conversation.metadata),
                          conversation.owner))
            self._insert_items(conn, conversation.id, items)
            self.limits.enforce(conn, conversation.id)

    def get(self, conversation_id: str) -> StoredConversation | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT created_at, metadata, owner FROM conversations WHERE id = ? AND stored_at > ?",
                               (conversation_id, self.limits.horizon())).fetchone()
        return None if row is None else StoredConversation(conversation_id, json.loads(row[1]), row[0], row[2])

    def set_metadata(self, conversation_id: str, metadata: dict[str, str]) -> StoredConversation | None:
        with self.db.write() as conn:
            changed = conn.execute(
                "UPDATE conversations SET metadata = ?, stored_at = ? WHERE id = ? AND stored_at > ?",
                (_dumps(metadata), self.limits.clock(), conversation_id, self.limits.horizon())).rowcount
        return self.get(conversation_id) if changed else None

    def delete(self, conversation_id: str) -> bool:
        with self.db.write() as conn:
            return conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount > 0

    def add_items(self, conversation_id: str, items: list[dict[str, Any]]) -> bool:
        with self.db.write() as conn:
            touched = conn.execute("UPDATE conversations SET stored_at = ? WHERE id = ? AND stored_at > ?",
                                   (self.limits.clock(), conversation_id, self.limits.horizon())).rowcount
            if touched:
                self._insert_items(conn, conversation_id, items)
            return touched > 0

    def items(self, conversation_id: str) -> list[dict[str, Any]] | None:
        with self.db.read() as conn:
            if conn.execute("SELECT 1 FROM conversations WHERE id = ? AND stored_at > ?",
                            (conversation_id, self.limits.horizon())).fetchone() is None:
                return None
            rows = conn.execute("SELECT item FROM conversation_items WHERE conversation_id = ? ORDER BY position",
                                (conversation_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def delete_item(self, conversation_id: str, item_id: str) -> bool:
        with self.db.write() as conn:
            return conn.execute("DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?",
                                (conversation_id, item_id)).rowcount > 0

    def __len__(self) -> int:
        with self.db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM conversations WHERE stored_at > ?",
                                    (self.limits.horizon(),)).fetchone()[0])

    @staticmethod
    def _insert_items(conn: sqlite3.Connection, conversation_id: str, items: list[dict[str, Any]]) -> None:
        conn.executemany("INSERT INTO conversation_items (conversation_id, item_id, item) VALUES (?, ?, ?)",
                         [(conversation_id, item["id"], _dumps(item)) for item in items])
