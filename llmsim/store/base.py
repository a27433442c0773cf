"""The store interface every backend (memory now, SQLite later) implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class StoredResponse:
    """A response with what is needed to list its input, chain from it and replay its stream."""

    response: dict[str, Any]
    input_items: list[dict[str, Any]]
    history: list[dict[str, Any]] = field(default_factory=list)  # items before this response's input
    events: list[tuple[str, str]] = field(default_factory=list)  # (type, JSON) of each stream event, in order

    @property
    def id(self) -> str:
        return self.response["id"]

    def context(self) -> list[dict[str, Any]]:
        """The items a response chained from this one inherits: history, input, then output."""
        return [*self.history, *self.input_items, *self.response["output"]]


class ResponseStore(Protocol):
    def put(self, record: StoredResponse) -> None: ...

    def get(self, response_id: str) -> StoredResponse | None: ...

    def delete(self, response_id: str) -> bool: ...

    def __len__(self) -> int: ...
