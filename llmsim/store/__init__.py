"""Where responses and conversations live: in memory (default) or in SQLite (`--store sqlite:///path.db`)."""

from __future__ import annotations

from dataclasses import dataclass

from llmsim.store.base import (
    FINAL_STATUSES,
    ConversationStore,
    ResponseStore,
    SerializedEvent,
    StoredConversation,
    StoredResponse,
)
from llmsim.store.memory import MemoryConversations, MemoryStore
from llmsim.store.sqlite import Database, SQLiteConversations, SQLiteStore

SQLITE_PREFIX = "sqlite:///"

__all__ = [
    "FINAL_STATUSES", "ConversationStore", "MemoryConversations", "MemoryStore", "ResponseStore", "SerializedEvent",
    "SQLiteConversations", "SQLiteStore", "Stores", "StoredConversation", "StoredResponse", "open_stores",
    "parse_store_url", "prepare_store",
]


@dataclass
class Stores:
    responses: ResponseStore
    conversations: ConversationStore


def parse_store_url(url: str) -> str | None:
    """None for the memory store, else the SQLite file path (`sqlite:///rel.db`, `sqlite:////abs/path.db`)."""
    if url in ("", "memory"):
        return None
    if url.startswith(SQLITE_PREFIX) and len(url) > len(SQLITE_PREFIX):
        return url[len(SQLITE_PREFIX):]
    raise ValueError(f"unknown store {url!r}: use 'memory' or 'sqlite:///path.db'")


def prepare_store(url: str) -> None:
    """Check `url` and create the SQLite schema once, before worker processes open the file."""
    path = parse_store_url(url)
    if path is not None:
        Database(path).close()


def open_stores(url: str, max_entries: int, ttl_seconds: float) -> Stores:
    """The stores behind `--store`; both kinds apply the same entry and TTL limits."""
    path = parse_store_url(url)
    if path is None:
        return Stores(MemoryStore(max_entries, ttl_seconds), MemoryConversations(max_entries, ttl_seconds))
    db = Database(path)
    return Stores(SQLiteStore(db, max_entries, ttl_seconds), SQLiteConversations(db, max_entries, ttl_seconds))
