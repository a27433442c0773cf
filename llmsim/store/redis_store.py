"""Redis stores: responses and conversations shared by every worker of every server of a fleet.

A response is a hash (each dataclass field as JSON, plus `status`, `stopping` and the ids of its items).
A finished one keeps its stream as a `replay` field: the deltas' compact form, a few hundred bytes, from
which any process builds the events again. A background one, as it runs, keeps its events in a list (an
event's index is its sequence number) and a one-entry stream that wakes followers on every change. A JSON
answer's hash is written with its request log entry (llmsim/api/writes.py). Redis' own expiry applies
`--store-ttl`; a sorted set by age applies `--store-max-entries`, evicting the oldest finished responses only.
Every change that must not interleave with another is one Lua script or one WATCH/MULTI transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import redis

from llmsim.store.base import (
    FINAL_STATUSES,
    UNSEEN_GRACE_SECONDS,
    Replayable,
    SerializedEvent,
    StoredConversation,
    StoredResponse,
)
from llmsim.store.redis_client import PREFIX, Batch, Heartbeat, Scripts, dumps

RESPONSES = f"{PREFIX}responses"  # sorted set: response id by when it was stored (ms)
CONVERSATIONS = f"{PREFIX}conversations"
MAX_INDEX = 1 << 40  # an event index past any response's end that Lua's numbers hold exactly
FINAL = "{" + ",".join(f"['{status}']=true" for status in sorted(FINAL_STATUSES)) + "}"

# Shared by the scripts: the server's clock in ms, and the removal of a response with its keys.
_COMMON = f"""
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local final = {FINAL}
local function drop_response(id)
  local key = '{PREFIX}r:' .. id
  local items = redis.call('HGET', key, 'items')
  if items then
    for item in string.gmatch(items, '%S+') do redis.call('DEL', '{PREFIX}item:' .. item) end
  end
  redis.call('DEL', key, key .. ':e', key .. ':w')
  redis.call('ZREM', '{RESPONSES}', id)
end
local function push(key, from)  -- ARGV[from]: the events joined by \\x1e (see _joined)
  if #ARGV < from or ARGV[from] == '' then return end
  local batch, start, blob = {{}}, 1, ARGV[from]
  while true do
    local stop = string.find(blob, string.char(30), start, true)
    table.insert(batch, string.sub(blob, start, (stop or 0) - 1))
    if #batch == 1000 or not stop then redis.call('RPUSH', key, unpack(batch)); batch = {{}} end
    if not stop then break end
    start = stop + 1
  end
end
"""

# KEYS: hash, events, wake. ARGV: id, ttl ms, max entries, item ids (space-separated), n fields, field, value...,
# then the events (see _joined).
_PUT = _COMMON + f"""
local id, ttl, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 1 then drop_response(id) end
local n = tonumber(ARGV[5])
local args = {{'items', ARGV[4], 'stopping', '0'}}
for i = 0, n - 1 do
  table.insert(args, ARGV[6 + 2 * i]); table.insert(args, ARGV[7 + 2 * i])
end
redis.call('HSET', KEYS[1], unpack(args))
push(KEYS[2], 6 + 2 * n)
for item in string.gmatch(ARGV[4], '%S+') do redis.call('SET', '{PREFIX}item:' .. item, id) end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl); redis.call('PEXPIRE', KEYS[2], ttl)
  for item in string.gmatch(ARGV[4], '%S+') do redis.call('PEXPIRE', '{PREFIX}item:' .. item, ttl) end
  redis.call('ZREMRANGEBYSCORE', '{RESPONSES}', '-inf', now - ttl)
end
redis.call('ZADD', '{RESPONSES}', now, id)
local excess = redis.call('ZCARD', '{RESPONSES}') - max
local start = 0
while excess > 0 do
  local batch = redis.call('ZRANGE', '{RESPONSES}', start, start + excess + 9)
  if #batch == 0 then break end
  for _, old in ipairs(batch) do
    if excess <= 0 then break end
    local state = redis.call('HMGET', '{PREFIX}r:' .. old, 'status', 'unseen_until')
    local status, unseen = state[1], tonumber(state[2])
    if not status or final[status] and not (unseen and unseen > now) then
      drop_response(old); excess = excess - 1
    else
      start = start + 1
    end
  end
end
return 1
"""

# KEYS: hash, events, wake. ARGV: force, response JSON or '', status, item ids to add, the events (see _joined).
_APPEND = _COMMON + f"""
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if ARGV[1] ~= '1' and (status == 'cancelled' or redis.call('HGET', KEYS[1], 'stopping') == '1') then return 0 end
push(KEYS[2], 5)
if ARGV[2] ~= '' then
  status = ARGV[3]
  redis.call('HSET', KEYS[1], 'response', ARGV[2], 'status', status)
  if final[status] then
    redis.call('HSET', KEYS[1], 'stopping', '0')
    local worker = redis.call('HGET', KEYS[1], 'worker')
    if worker and worker ~= 'null' then  -- a background response, finished: kept until read (UNSEEN_GRACE_SECONDS)
      redis.call('HSET', KEYS[1], 'unseen_until', now_ms() + {int(UNSEEN_GRACE_SECONDS * 1000)})
    end
  end
end
local ttl = redis.call('PTTL', KEYS[1])
if ARGV[4] ~= '' then
  local id = string.sub(KEYS[1], {len(PREFIX) + 3})
  redis.call('HSET', KEYS[1], 'items', redis.call('HGET', KEYS[1], 'items') .. ' ' .. ARGV[4])
  for item in string.gmatch(ARGV[4], '%S+') do
    redis.call('SET', '{PREFIX}item:' .. item, id)
    if ttl > 0 then redis.call('PEXPIRE', '{PREFIX}item:' .. item, ttl) end
  end
end
redis.call('XADD', KEYS[3], 'MAXLEN', '1', '*', 'n', redis.call('LLEN', KEYS[2]), 's', status)
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl); redis.call('PEXPIRE', KEYS[3], ttl) end
return 1
"""

# KEYS: hash, events. ARGV: after. → false, {status, '', events...}, or {status, replay, response} for a response
# whose events are built again from its replay.
_TAIL = _COMMON + """
local state = redis.call('HMGET', KEYS[1], 'status', 'replay', 'response')
if not state[1] then return false end
if final[state[1]] then redis.call('HDEL', KEYS[1], 'unseen_until') end  -- its stream's reader sees it final
if state[2] then return state end
local events = redis.call('LRANGE', KEYS[2], tonumber(ARGV[1]) + 1, -1)
table.insert(events, 1, '')
table.insert(events, 1, state[1])
return events
"""

_DELETE = _COMMON + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
drop_response(ARGV[1])
return 1
"""

_LEN = _COMMON + """
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms() - ttl) end
return redis.call('ZCARD', KEYS[1])
"""


# A response's fields as JSON, each in its own hash field (fields added later come along). A finished response's
# `replay` is one more field, in its compact form (`Replayable.dump`); the events of one without (a background
# response, as it runs) go to a list of their own.
_RECORD_FIELDS = [f.name for f in fields(StoredResponse)
                  if f.init and f.name not in ("response", "events", "replay")]  # the response: its own JSON
LoadReplay = Callable[[bytes], Replayable]
_EMPTY: dict[type, str] = {str: '""', list: "[]"}


def _field_json(value: Any) -> str:
    """A record's field as JSON: the empty values most fields hold (no worker, no owner, no history) at once."""
    if value is None:
        return "null"
    return _EMPTY[type(value)] if not value and type(value) in _EMPTY else dumps(value)


def _event(raw: bytes) -> SerializedEvent:
    kind, _, data = raw.decode().partition("\n")
    return kind, data


def _joined(events: list[SerializedEvent]) -> str:
    """Events as one argument: `type\ndata` each, joined by \x1e (JSON escapes control characters, so neither
    byte occurs inside an event)."""
    return "\x1e".join(f"{kind}\n{data}" for kind, data in events)


def _item_ids(items: list[dict[str, Any]]) -> str:
    return " ".join(str(item["id"]) for item in items if isinstance(item.get("id"), str) and " " not in item["id"])


class RedisStore:
    """Responses and their stream events in Redis. `load_replay` reads a replay back from its `dump`; without it
    a response's events are stored as they are."""

    shared = True  # by a fleet: metrics count it when scraped, not after every request

    def __init__(self, client: Any, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 heartbeat: Heartbeat | None = None, load_replay: LoadReplay | None = None,
                 batch: Batch | None = None) -> None:
        self.client = client
        self.load_replay = load_replay
        self.batch = batch or Batch(Scripts(client))
        self.max_entries = max_entries
        self.ttl_ms = int(ttl_seconds * 1000) if ttl_seconds > 0 else 0
        self.heartbeat = heartbeat
        self._put = self.batch.scripts.register(_PUT)
        self._append = self.batch.scripts.register(_APPEND)
        self._tail = self.batch.scripts.register(_TAIL)
        self._delete = self.batch.scripts.register(_DELETE)
        self._len = self.batch.scripts.register(_LEN)

    @staticmethod
    def _keys(response_id: str) -> list[str]:
        key = f"{PREFIX}r:{response_id}"
        return [key, f"{key}:e", f"{key}:w"]

    def put(self, record: StoredResponse) -> None:
        if self.max_entries <= 0:
            return
        values = ["response", record.response_json(keep=True)]  # the JSON answer's own encoding too
        for name in _RECORD_FIELDS:
            values += [name, _field_json(getattr(record, name))]
        values += ["status", record.status]
        events = ""
        dumped = record.replay.dump() if record.replay is not None and self.load_replay is not None else None
        if dumped is not None:
            values += ["replay", dumped]
        else:
            events = _joined(record.stream_events())
        items = _item_ids([*record.input_items, *record.response.get("output", [])])
        keys = self._keys(record.id)
        args = [record.id, self.ttl_ms, self.max_entries, items, len(values) // 2, *values, events]
        if record.status in FINAL_STATUSES:  # may wait for the answer (a held batch): no worker appends to it
            self.batch.write(self._put, keys, args)
        else:
            self._put(keys=keys, args=args)

    def get(self, response_id: str) -> StoredResponse | None:
        key, events_key, _ = self._keys(response_id)
        names = ["response", *_RECORD_FIELDS]
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hmget(key, [*names, "replay", "unseen_until"])
            pipe.lrange(events_key, 0, -1)
            (*values, replay, unseen), events = pipe.execute()
        if unseen is not None:  # a finished background response, read once: evictable like any other from now on
            self.client.hdel(key, "unseen_until")
        if values[0] is None:
            return None
        data = {name: json.loads(value) for name, value in zip(names, values, strict=True) if value is not None}
        if replay is not None and self.load_replay is not None:
            return StoredResponse(**data, replay=self.load_replay(replay))
        return StoredResponse(**data, events=[_event(e) for e in events])

    def delete(self, response_id: str) -> bool:
        return bool(self._delete(keys=self._keys(response_id)[:1], args=[response_id]))

    def __len__(self) -> int:
        return int(self._len(keys=[RESPONSES], args=[self.ttl_ms]))

    def append(self, response_id: str, events: list[SerializedEvent], response: dict[str, Any] | None = None,
               *, force: bool = False) -> bool:
        snapshot = "" if response is None else dumps(response)
        status = "" if response is None else str(response.get("status"))
        items = "" if response is None or status not in FINAL_STATUSES else _item_ids(response.get("output", []))
        return bool(self._append(keys=self._keys(response_id),
                                 args=["1" if force else "0", snapshot, status, items,
                                       _joined(events)]))

    def tail(self, response_id: str, after: int) -> tuple[str, list[SerializedEvent]] | None:
        state = self._tail(keys=self._keys(response_id)[:2], args=[min(after, MAX_INDEX)])
        if state is None:
            return None
        status, replay = state[0].decode(), state[1]
        if replay and self.load_replay is not None:
            return status, self.load_replay(replay).events(json.loads(state[2]))[max(after + 1, 0):]
        return status, [_event(e) for e in state[2:]]

    def wait(self, response_id: str, after: int, status: str, timeout: float) -> None:
        """Block (no polling) until the response has events past `after` or a status other than `status`,
        or `timeout` seconds pass: the wake stream's one entry says how things stand after each change."""
        wake = self._keys(response_id)[2]
        latest = self.client.xrevrange(wake, count=1)
        if not latest:
            self.client.xread({wake: "0-0"}, block=max(1, int(timeout * 1000)))
            return
        entry_id, state = latest[0]
        if int(state[b"n"]) > after + 1 or state[b"s"].decode() != status:
            return
        self.client.xread({wake: entry_id}, block=max(1, int(timeout * 1000)))

    def cancel(self, response_id: str) -> StoredResponse | None:
        key, _, wake = self._keys(response_id)
        with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(key)
                    status, response = pipe.hmget(key, ["status", "response"])
                    pipe.multi()
                    if status == b"queued":
                        cancelled = {**json.loads(response), "status": "cancelled"}
                        pipe.hset(key, mapping={"status": "cancelled", "response": dumps(cancelled)})
                        pipe.xadd(wake, {"n": 0, "s": "cancelled"}, maxlen=1)
                    elif status is not None and status.decode() not in FINAL_STATUSES:
                        pipe.hset(key, "stopping", "1")
                    pipe.execute()
                    break
                except redis.exceptions.WatchError:
                    continue
        return self.get(response_id)

    def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """An item of a stored response (its input or output) by the item's id; `owner`: only in a response of
        that API key's scope (None: any)."""
        holder = self.client.get(f"{PREFIX}item:{item_id}")
        record = None if holder is None else self.get(holder.decode())
        if record is None or owner is not None and record.owner != owner:
            return None
        return next((item for item in [*record.input_items, *record.response.get("output", [])]
                     if item.get("id") == item_id), None)

    def ping(self) -> None:
        """Raises while Redis cannot be reached (the health check's 503)."""
        self.client.ping()

    def worker_alive(self, worker: str) -> bool:
        """Whether the process (on any server) generating a background response still beats."""
        return self.heartbeat is None or self.heartbeat.alive(worker)


# KEYS: hash, items. ARGV: ttl ms, max entries, id, n fields, field, value..., then the items.
_CREATE = _COMMON + f"""
local ttl, max, id = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
redis.call('DEL', KEYS[1], KEYS[2])
local n = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], unpack(ARGV, 5, 4 + 2 * n))
push(KEYS[2], 5 + 2 * n)
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl); redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('ZREMRANGEBYSCORE', '{CONVERSATIONS}', '-inf', now - ttl)
end
redis.call('ZADD', '{CONVERSATIONS}', now, id)
local excess = redis.call('ZCARD', '{CONVERSATIONS}') - max
if excess > 0 then
  for _, old in ipairs(redis.call('ZRANGE', '{CONVERSATIONS}', 0, excess - 1)) do
    redis.call('DEL', '{PREFIX}c:' .. old, '{PREFIX}c:' .. old .. ':i')
    redis.call('ZREM', '{CONVERSATIONS}', old)
  end
end
return 1
"""

# KEYS: hash, items. ARGV: ttl ms, id, field or '', value, then items to add. Touches the conversation (its age
# starts again), as the memory and SQLite stores do.
_TOUCH = _COMMON + f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local ttl = tonumber(ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
push(KEYS[2], 5)
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl); redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('ZADD', '{CONVERSATIONS}', now_ms(), ARGV[2])
return 1
"""


class RedisConversations:
    """Conversations (a hash of their fields) and their items (a list, in order) in Redis."""

    def __init__(self, client: Any, max_entries: int = 1024, ttl_seconds: float = 3600.0,
                 batch: Batch | None = None) -> None:
        self.client = client
        self.max_entries = max_entries
        self.ttl_ms = int(ttl_seconds * 1000) if ttl_seconds > 0 else 0
        self.batch = batch or Batch(Scripts(client))
        scripts = self.batch.scripts
        self._create = scripts.register(_CREATE)
        self._touch = scripts.register(_TOUCH)
        self._len = scripts.register(_LEN)

    @staticmethod
    def _keys(conversation_id: str) -> list[str]:
        key = f"{PREFIX}c:{conversation_id}"
        return [key, f"{key}:i"]

    def create(self, conversation: StoredConversation, items: list[dict[str, Any]]) -> None:
        if self.max_entries <= 0:
            return
        values: list[str] = []
        for f in fields(conversation):
            values += [f.name, dumps(getattr(conversation, f.name))]
        self._create(keys=self._keys(conversation.id),
                     args=[self.ttl_ms, self.max_entries, conversation.id, len(values) // 2, *values,
                           "\x1e".join(dumps(item) for item in items)])

    def get(self, conversation_id: str) -> StoredConversation | None:
        data = self.client.hgetall(self._keys(conversation_id)[0])
        if not data:
            return None
        return StoredConversation(**{name.decode(): json.loads(value) for name, value in data.items()})

    def set_metadata(self, conversation_id: str, metadata: dict[str, str]) -> StoredConversation | None:
        touched = self._touch(keys=self._keys(conversation_id),
                              args=[self.ttl_ms, conversation_id, "metadata", dumps(metadata)])
        return self.get(conversation_id) if touched else None

    def delete(self, conversation_id: str) -> bool:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(*self._keys(conversation_id))
            pipe.zrem(CONVERSATIONS, conversation_id)
            deleted, _ = pipe.execute()
        return deleted > 0

    def add_items(self, conversation_id: str, items: list[dict[str, Any]]) -> bool:
        keys = self._keys(conversation_id)
        args = [self.ttl_ms, conversation_id, "", "", "\x1e".join(map(dumps, items))]
        if self.batch.holding():  # a JSON answer's turn: it goes with the stored response (the request found it)
            self.batch.write(self._touch, keys, args)
            return True
        return bool(self._touch(keys=keys, args=args))

    def items(self, conversation_id: str) -> list[dict[str, Any]] | None:
        key, items_key = self._keys(conversation_id)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.exists(key)
            pipe.lrange(items_key, 0, -1)
            exists, items = pipe.execute()
        return [json.loads(item) for item in items] if exists else None

    def delete_item(self, conversation_id: str, item_id: str) -> bool:
        items_key = self._keys(conversation_id)[1]
        with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(items_key)
                    gone = [raw for raw in pipe.lrange(items_key, 0, -1) if json.loads(raw).get("id") == item_id]
                    pipe.multi()
                    for raw in gone:
                        pipe.lrem(items_key, 1, raw)
                    pipe.execute()
                    return bool(gone)
                except redis.exceptions.WatchError:
                    continue

    def __len__(self) -> int:
        return int(self._len(keys=[CONVERSATIONS], args=[self.ttl_ms]))
