"""Where responses live after they are made."""

from llmsim.store.base import ResponseStore, StoredResponse
from llmsim.store.memory import MemoryStore

__all__ = ["MemoryStore", "ResponseStore", "StoredResponse"]
