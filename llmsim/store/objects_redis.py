"""Files and jobs in Redis (llmsim/store/objects.py's interface), shared by every server of a fleet.

A record is a hash: `owner`, `created`, and each field as JSON in a hash field of its own, so `update` is one HSET
(a merge) and `claim` one script. A file's bytes are a string beside it, a job's result lines a hash by position. A
sorted set per kind lists them by age; Redis' own expiry applies `--store-ttl`, the set `--store-max-entries`.
"""

from __future__ import annotations

import json
from typing import Any

from llmsim.store.objects import PINNED, Stored
from llmsim.store.redis_client import PREFIX, dumps

_CLAIM = """
if redis.call('HGET', KEYS[1], 'f:' .. ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'f:' .. ARGV[1], ARGV[3])
return 1
"""

_UPDATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""


class RedisObjects:
    def __init__(self, client: Any, max_entries: int = 1024, ttl_seconds: float = 3600.0) -> None:
        self.client = client
        self.max_entries = max_entries
        self.ttl_ms = int(ttl_seconds * 1000) if ttl_seconds > 0 else 0
        self._claim = client.register_script(_CLAIM)
        self._update = client.register_script(_UPDATE)

    @staticmethod
    def _key(kind: str, object_id: str) -> str:
        return f"{PREFIX}o:{kind}:{object_id}"

    @staticmethod
    def _index(kind: str) -> str:
        return f"{PREFIX}objects:{kind}"

    def put(self, record: Stored, content: bytes | None = None) -> None:
        if self.max_entries <= 0:
            return
        key = self._key(record.kind, record.id)
        mapping = {"owner": record.owner, "created": repr(record.created),
                   **{f"f:{name}": dumps(value) for name, value in record.fields.items()}}
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(key, f"{key}:c", f"{key}:l")
            pipe.hset(key, mapping=mapping)
            if content is not None:
                pipe.set(f"{key}:c", content)
            if self.ttl_ms:
                pipe.pexpire(key, self.ttl_ms)
                pipe.pexpire(f"{key}:c", self.ttl_ms)
            pipe.zadd(self._index(record.kind), {record.id: record.created})
            pipe.execute()
        self._evict(record.kind, record.id)

    def _evict(self, kind: str, kept: str) -> None:
        """Past the entry limit, the oldest records that no job runs on go (their keys may have expired already)."""
        index = self._index(kind)
        excess = int(self.client.zcard(index)) - self.max_entries
        if excess <= 0:
            return
        for raw in self.client.zrange(index, 0, -1):
            object_id = raw.decode()
            if excess <= 0:
                break
            key = self._key(kind, object_id)
            pinned = self.client.hget(key, f"f:{PINNED}")
            if object_id == kept or pinned is not None and json.loads(pinned):
                continue
            self.client.delete(key, f"{key}:c", f"{key}:l")
            self.client.zrem(index, object_id)
            excess -= 1

    @staticmethod
    def _record(kind: str, object_id: str, data: dict[bytes, bytes]) -> Stored:
        fields = {name.decode()[2:]: json.loads(value) for name, value in data.items() if name.startswith(b"f:")}
        return Stored(kind, object_id, data[b"owner"].decode(), fields, float(data[b"created"]))

    def get(self, kind: str, object_id: str) -> Stored | None:
        data = self.client.hgetall(self._key(kind, object_id))
        return self._record(kind, object_id, data) if data else None

    def update(self, kind: str, object_id: str, changes: dict[str, Any]) -> Stored | None:
        values = [part for name, value in changes.items() for part in (f"f:{name}", dumps(value))]
        if not self._update(keys=[self._key(kind, object_id)], args=values):
            return None
        return self.get(kind, object_id)

    def claim(self, kind: str, object_id: str, name: str, expected: Any, value: Any) -> bool:
        return bool(self._claim(keys=[self._key(kind, object_id)], args=[name, dumps(expected), dumps(value)]))

    def content(self, kind: str, object_id: str) -> bytes | None:
        data: bytes | None = self.client.get(f"{self._key(kind, object_id)}:c")
        return data

    def delete(self, kind: str, object_id: str) -> bool:
        key = self._key(kind, object_id)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(key, f"{key}:c", f"{key}:l")
            pipe.zrem(self._index(kind), object_id)
            deleted, _ = pipe.execute()
        return bool(deleted)

    def listed(self, kind: str, owner: str | None) -> list[Stored]:
        found = []
        for raw in self.client.zrevrange(self._index(kind), 0, -1):
            record = self.get(kind, raw.decode())
            if record is None:  # expired: its place in the index goes too
                self.client.zrem(self._index(kind), raw)
            elif owner is None or record.owner == owner:
                found.append(record)
        return found

    def add_line(self, kind: str, object_id: str, index: int, line: str) -> None:
        key = self._key(kind, object_id)
        if self.client.exists(key):
            self.client.hsetnx(f"{key}:l", str(index), line)
            if self.ttl_ms:
                self.client.pexpire(f"{key}:l", self.ttl_ms)

    def lines(self, kind: str, object_id: str) -> dict[int, str]:
        return {int(position): line.decode() for position, line in
                self.client.hgetall(f"{self._key(kind, object_id)}:l").items()}
