"""Where responses and conversations live: in memory (default), in SQLite (`--store sqlite:///path.db`) or in
Redis (`--store redis://host:port/db`, shared by a fleet of servers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmsim.store.base import (
    FINAL_STATUSES,
    ConversationStore,
    Replayable,
    ResponseStore,
    SerializedEvent,
    StorageUnavailable,
    StoredConversation,
    StoredResponse,
)
from llmsim.store.memory import MemoryConversations, MemoryStore
from llmsim.store.redis_client import is_redis_url

if TYPE_CHECKING:
    from llmsim.store.sqlite import SQLiteConversations, SQLiteStore

SQLITE_PREFIX = "sqlite:///"

__all__ = [
    "FINAL_STATUSES", "ConversationStore", "MemoryConversations", "MemoryStore", "ResponseStore", "SerializedEvent",
    "SQLiteConversations", "SQLiteStore", "Stores", "StoredConversation", "StoredResponse", "open_stores",
    "parse_store_url", "prepare_store",
]


def __getattr__(name: str) -> Any:
    """The SQLite stores, imported when asked for: a server on another store never loads sqlite3 (~1.5 MB)."""
    if name in ("Database", "SQLiteConversations", "SQLiteStore"):
        from llmsim.store import sqlite

        return getattr(sqlite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Stores:
    responses: ResponseStore
    conversations: ConversationStore
    redis: Any = None  # the Redis client, when the fleet's chaos state lives there too
    batch: Any = None  # its Batch (llmsim/store/redis_client.py): writes sent together
    heartbeat: Any = None  # this process's Heartbeat there

    def close(self) -> None:
        """Stop the heartbeat and close the client: for a process that opens stores for a while (a test), whose
        heartbeat would otherwise outlive the Redis it beats to."""
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.redis is not None:
            self.redis.close()


def parse_store_url(url: str) -> str | None:
    """None for the memory store (and Redis), else the SQLite file path (`sqlite:///rel.db`,
    `sqlite:////abs/path.db`)."""
    if url in ("", "memory") or is_redis_url(url):
        return None
    if url.startswith(SQLITE_PREFIX) and len(url) > len(SQLITE_PREFIX):
        return url[len(SQLITE_PREFIX):]
    raise ValueError(f"unknown store {url!r}: use 'memory', 'sqlite:///path.db' or 'redis://host:port/db'")


def prepare_store(url: str) -> None:
    """Check `url` and create the SQLite schema once, before worker processes open the file; Redis must answer.
    Run in serve's preflight child (llmsim/preflight.py): the `redis` package imported in the process that forks
    the workers would hold `ssl`'s classes from before gevent patches them in each worker (a MonkeyPatchWarning per
    worker)."""
    if is_redis_url(url):
        if failure := _redis_failure(url):
            raise ValueError(failure)
        return
    path = parse_store_url(url)
    if path is not None:
        from llmsim.store.sqlite import Database

        try:
            db = Database(path)
            try:
                db.check()  # a store that cannot be written (read-only, full) fails here, not at the first answer
            finally:
                db.close()
        except StorageUnavailable as error:
            raise ValueError(f"{path}: {error.cause} ({error.__cause__})") from None


def _redis_failure(url: str) -> str:
    """'' when Redis answers at `url`, else why not (without the URL's password)."""
    from llmsim.store.redis_client import connect

    try:
        client = connect(url)
    except ValueError as exc:  # no redis package: the message says which extra to install
        return str(exc)
    try:
        client.ping()
    except Exception as exc:  # noqa: BLE001 - the message names what failed (refused, auth, TLS, unknown host)
        return f"cannot use Redis at {url.rpartition('@')[2]}: {exc}"
    finally:
        client.close()
    return ""


def open_stores(url: str, max_entries: int, ttl_seconds: float,
                load_replay: Callable[[bytes], Replayable] | None = None) -> Stores:
    """The stores behind `--store`; every kind applies the same entry and TTL limits. `load_replay`: how a store
    other processes read (Redis) gets a response's replay back from its `dump` (without it, it keeps the events)."""
    if is_redis_url(url):
        from llmsim.store.redis_client import Batch, Heartbeat, Scripts, connect
        from llmsim.store.redis_store import RedisConversations, RedisStore
        from llmsim.store.workers import this_worker

        client = connect(url)
        heartbeat = Heartbeat(client, this_worker())
        heartbeat.start()
        batch = Batch(Scripts(client))
        return Stores(RedisStore(client, max_entries, ttl_seconds, heartbeat, load_replay, batch),
                      RedisConversations(client, max_entries, ttl_seconds, batch), client, batch, heartbeat)
    path = parse_store_url(url)
    if path is None:
        return Stores(MemoryStore(max_entries, ttl_seconds), MemoryConversations(max_entries, ttl_seconds))
    from llmsim.store.sqlite import Database, SQLiteConversations, SQLiteStore

    db = Database(path)
    return Stores(SQLiteStore(db, max_entries, ttl_seconds), SQLiteConversations(db, max_entries, ttl_seconds))
