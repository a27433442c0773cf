"""The store interfaces every backend (memory, SQLite) implements, and the records they hold."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from llmsim import wire

SerializedEvent = tuple[str, str]  # (event type, JSON data); an event's sequence_number is its index
# Statuses after which a response changes no more.
FINAL_STATUSES = frozenset({"completed", "failed", "incomplete", "cancelled"})
class StorageUnavailable(Exception):
    """The store cannot be written or read (disk full, read-only, locked past its timeout): the server answers 503
    with `storage_unavailable` and the cause, and /llmsim/health says so, instead of a generic 500."""

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(f"The response store is unavailable: {cause} ({detail}).")
        self.cause = cause
        self.message = str(self)


# A background response that finishes is kept (the entry limit passes it by) until it is read once, or for this
# long: a client that polls for it must not find it evicted by the responses finishing around it.
UNSEEN_GRACE_SECONDS = 300.0
# Compact JSON, UTF-8 as is: what Flask's jsonify writes (with a newline) for this app (llmsim/app.py).
_dumps = wire.dumps


@dataclass
class StoredResponse:
    """A response with what is needed to list its input, chain from it and replay its stream."""

    response: dict[str, Any]
    input_items: list[dict[str, Any]]
    history: list[dict[str, Any]] = field(default_factory=list)  # items before this response's input
    events: list[SerializedEvent] = field(default_factory=list)  # stream events so far, in order
    worker: str | None = None  # the process generating it, for a background response
    owner: str = ""  # the API key's scope it was made in ("": the one shared scope when no key is set)
    replay: Replayable | None = None  # a finished response's events, built on demand (`events` stays empty)
    _json: str | None = field(default=None, init=False, repr=False, compare=False)  # see `response_json`

    @property
    def id(self) -> str:
        return self.response["id"]

    @property
    def status(self) -> str:
        return str(self.response.get("status"))

    def response_json(self, keep: bool = False) -> str:
        """The response as compact JSON. `keep` (a store writing a final response): remembered for the next call,
        the JSON answer's, so the two share one encoding (a finished response changes no more)."""
        text = self._json or _dumps(self.response)
        if keep and self.status in FINAL_STATUSES:
            self._json = text
        return text

    def stream_events(self) -> list[SerializedEvent]:
        """Every stream event, in order: those kept, or those built again from the replay."""
        return self.events if self.replay is None else self.replay.events(self.response)

    def items(self) -> list[dict[str, Any]]:
        """Its own items, findable by id once stored: its input, then its output."""
        return [*self.input_items, *self.response["output"]]

    def item(self, item_id: str) -> dict[str, Any] | None:
        return next((item for item in reversed(self.items()) if item.get("id") == item_id), None)

    def context(self) -> list[dict[str, Any]]:
        """The items a response chained from this one inherits: history, input, then output."""
        return [*self.history, *self.input_items, *self.response["output"]]


class Replayable(Protocol):
    """How a finished response's events are built again (llmsim/responses/replay.py): the store keeps no text."""

    def events(self, final: dict[str, Any]) -> list[SerializedEvent]: ...

    def dump(self) -> str | None:
        """One JSON value, for a store other processes read (Redis); None: no compact form, it keeps the events."""
        ...


class ResponseStore(Protocol):
    """Responses by id, bounded by entry count and age.

    A background response is `put` when queued, then grows through `append` while it runs; any
    process sharing the store can `tail` it or `cancel` it.
    """

    def put(self, record: StoredResponse) -> None: ...

    def get(self, response_id: str) -> StoredResponse | None: ...

    def delete(self, response_id: str) -> bool: ...

    def __len__(self) -> int: ...

    def append(self, response_id: str, events: list[SerializedEvent], response: dict[str, Any] | None = None,
               *, force: bool = False) -> bool:
        """Add events (and the latest response snapshot) to a stored response, atomically.

        Returns False, writing nothing, when the response is gone or asked to cancel (unless `force`):
        that is how a running job learns it must stop.
        """
        ...

    def tail(self, response_id: str, after: int) -> tuple[str, list[SerializedEvent]] | None:
        """(status, events with sequence_number > after), read together; None if there is no such response."""
        ...

    def cancel(self, response_id: str) -> StoredResponse | None:
        """Ask a response to stop: a queued one is cancelled at once, a running one by its worker when it next
        appends. Returns the record as it now is."""
        ...

    def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """An input or output item of any stored response, by its id, as the real API resolves `item_reference`.

        Only what `get` would still return is found (TTL, eviction; `store: false` responses are never put), and
        a background response's output items once `append` has stored them. The newest response holding the id
        wins. `owner`: only among the responses of that API key's scope (None: any)."""
        ...


@dataclass
class StoredConversation:
    id: str
    metadata: dict[str, str]
    created_at: int = field(default_factory=lambda: int(time.time()))
    owner: str = ""  # like StoredResponse.owner

    def public(self) -> dict[str, Any]:
        """The Conversation object as the SDK's type defines it."""
        return {"id": self.id, "object": "conversation", "created_at": self.created_at, "metadata": self.metadata}


class ConversationStore(Protocol):
    """Conversations and their items, in order; bounded by entry count and age like responses."""

    def create(self, conversation: StoredConversation, items: list[dict[str, Any]]) -> None: ...

    def get(self, conversation_id: str) -> StoredConversation | None: ...

    def set_metadata(self, conversation_id: str, metadata: dict[str, str]) -> StoredConversation | None: ...

    def delete(self, conversation_id: str) -> bool: ...

    def add_items(self, conversation_id: str, items: list[dict[str, Any]]) -> bool:
        """Append items; False if the conversation does not exist."""
        ...

    def items(self, conversation_id: str) -> list[dict[str, Any]] | None:
        """All items, oldest first; None if the conversation does not exist."""
        ...

    def delete_item(self, conversation_id: str, item_id: str) -> bool: ...

    def __len__(self) -> int: ...
