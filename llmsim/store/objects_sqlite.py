"""Files and jobs in SQLite (llmsim/store/objects.py's interface): they survive a restart, and every worker
process of the server sees the same ones. A record's fields are one JSON text, merged inside a write transaction."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from llmsim.store.objects import PINNED, Stored
from llmsim.store.sqlite import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL, id TEXT NOT NULL, owner TEXT NOT NULL, created REAL NOT NULL, stored_at REAL NOT NULL,
    fields TEXT NOT NULL, content BLOB, PRIMARY KEY (kind, id));
CREATE INDEX IF NOT EXISTS objects_by_age ON objects (stored_at);
CREATE TABLE IF NOT EXISTS object_lines (
    kind TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL, line TEXT NOT NULL,
    PRIMARY KEY (kind, id, position),
    FOREIGN KEY (kind, id) REFERENCES objects (kind, id) ON DELETE CASCADE) WITHOUT ROWID
"""


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class SQLiteObjects:
    def __init__(self, db: Database, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        with db.write() as conn:
            for statement in SCHEMA.split(";"):
                conn.execute(statement)

    def _horizon(self) -> float:
        return self.clock() - self.ttl_seconds if self.ttl_seconds > 0 else float("-inf")

    def put(self, record: Stored, content: bytes | None = None) -> None:
        if self.max_entries <= 0:
            return
        with self.db.write() as conn:
            conn.execute("DELETE FROM objects WHERE kind = ? AND id = ?", (record.kind, record.id))
            conn.execute("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (record.kind, record.id, record.owner, record.created, self.clock(), _dumps(record.fields),
                          content))
            if self.ttl_seconds > 0:
                conn.execute("DELETE FROM objects WHERE stored_at <= ?", (self._horizon(),))
            conn.execute("DELETE FROM objects WHERE rowid IN (SELECT rowid FROM objects WHERE kind = :kind AND "
                         f"id != :id AND coalesce(json_extract(fields, '$.{PINNED}'), 0) = 0 ORDER BY stored_at "
                         "LIMIT max(0, (SELECT COUNT(*) FROM objects WHERE kind = :kind) - :max))",
                         {"kind": record.kind, "id": record.id, "max": self.max_entries})

    def get(self, kind: str, object_id: str) -> Stored | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT owner, created, fields FROM objects WHERE kind = ? AND id = ? AND "
                               "stored_at > ?", (kind, object_id, self._horizon())).fetchone()
        return None if row is None else Stored(kind, object_id, row[0], json.loads(row[2]), row[1])

    def update(self, kind: str, object_id: str, changes: dict[str, Any]) -> Stored | None:
        with self.db.write() as conn:
            row = conn.execute("SELECT owner, created, fields FROM objects WHERE kind = ? AND id = ?",
                               (kind, object_id)).fetchone()
            if row is None:
                return None
            fields = {**json.loads(row[2]), **changes}
            conn.execute("UPDATE objects SET fields = ? WHERE kind = ? AND id = ?", (_dumps(fields), kind, object_id))
        return Stored(kind, object_id, row[0], fields, row[1])

    def claim(self, kind: str, object_id: str, name: str, expected: Any, value: Any) -> bool:
        with self.db.write() as conn:
            row = conn.execute("SELECT fields FROM objects WHERE kind = ? AND id = ?", (kind, object_id)).fetchone()
            if row is None or json.loads(row[0]).get(name) != expected:
                return False
            fields = {**json.loads(row[0]), name: value}
            conn.execute("UPDATE objects SET fields = ? WHERE kind = ? AND id = ?", (_dumps(fields), kind, object_id))
            return True

    def content(self, kind: str, object_id: str) -> bytes | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT content FROM objects WHERE kind = ? AND id = ? AND stored_at > ?",
                               (kind, object_id, self._horizon())).fetchone()
        return None if row is None else row[0]

    def delete(self, kind: str, object_id: str) -> bool:
        with self.db.write() as conn:
            return conn.execute("DELETE FROM objects WHERE kind = ? AND id = ?", (kind, object_id)).rowcount > 0

    def listed(self, kind: str, owner: str | None) -> list[Stored]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT id, owner, created, fields FROM objects WHERE kind = ? AND stored_at > ? AND "
                                "(? IS NULL OR owner = ?) ORDER BY created DESC, id DESC",
                                (kind, self._horizon(), owner, owner)).fetchall()
        return [Stored(kind, row[0], row[1], json.loads(row[3]), row[2]) for row in rows]

    def add_line(self, kind: str, object_id: str, index: int, line: str) -> None:
        with self.db.write() as conn:
            if conn.execute("SELECT 1 FROM objects WHERE kind = ? AND id = ?", (kind, object_id)).fetchone():
                conn.execute("INSERT OR IGNORE INTO object_lines VALUES (?, ?, ?, ?)", (kind, object_id, index, line))

    def lines(self, kind: str, object_id: str) -> dict[int, str]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT position, line FROM object_lines WHERE kind = ? AND id = ?",
                                (kind, object_id)).fetchall()
        return dict(rows)
