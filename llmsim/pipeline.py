"""The shared road: what every surface's request passes between its prompt and its builder, and the services it
is handed with them (catalog, backend, stores, pacer, admission).

The one template every generating route runs is llmsim/orchestrate.py; a relayed request (proxy, replay) takes the
relay road, llmsim/relaying.py; what only a Responses request does (history, background, storing its response) is
llmsim/responses/run.py. Admission (scenarios, rate limits, faults) is the Gate the app was built with
(llmsim/chaos/admission.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from llmsim.backends.relay import Relay
from llmsim.chaos.admission import Gate
from llmsim.chaos.faults import Admission
from llmsim.generation import Backend, Delta, Prompt, expand
from llmsim.request import ApiRequest
from llmsim.store import ConversationStore, MemoryConversations, ResponseStore, StoredConversation, StoredResponse
from llmsim.timing.pacing import Pacer
from llmsim.timing.profiles import Catalog

if TYPE_CHECKING:
    from llmsim.responses.background import BackgroundRunner
    from llmsim.surface import Surface

T = TypeVar("T")
R = TypeVar("R")


class Pipeline:
    def __init__(self, catalog: Catalog, backend: Backend, store: ResponseStore, seed: int | None = None,
                 pacer: Pacer | None = None, conversations: ConversationStore | None = None,
                 gate: Gate | None = None, batch: Any = None, runner: BackgroundRunner | None = None) -> None:
        """`gate`: admission (none: everything admitted). `batch`: the Redis store's held writes (None: none).
        `runner`: background responses' workers (none: made when a background request first comes)."""
        self.catalog = catalog
        self.backend = backend
        self.relaying = backend if isinstance(backend, Relay) else None  # proxy, replay: they answer whole requests
        self.store = store
        self.conversations = MemoryConversations() if conversations is None else conversations  # empty is falsy
        self.runner = runner
        self.seed = seed
        self.pacer = pacer or Pacer(speed=0.0)
        self.gate = gate or Gate()
        self.batch = batch
        self.files: Callable[[str, str, str], str | None] | None = None  # (kind, owner, file id) → its words
        self.kept: dict[str, Any] = {}  # what a surface keeps for this server's life, by its own key (a prompt cache)

    def waits(self, prompt: Prompt, speed: float | None) -> bool:
        """Whether time passes between the answer's deltas: the pacer's waits, or a backend's computing."""
        return self.backend.computes or self.pacer.paces(prompt, speed)

    def direct_and_admit(self, surface: Surface, prompt: Prompt, asked: ApiRequest, stream: bool,
                         whole: bool = False, admitted: Admission | None = None) -> tuple[Prompt, Admission]:
        """Scenarios, then rate limits and faults (the gate's): what every surface applies between the prompt and
        the backend. `whole`: nothing of the answer leaves or waits before it is made (see ChaosState.decide)."""
        if self.pacer.full(prompt, asked.speed):  # refused before anything is counted or sent
            raise surface.overloaded(retry_after=1)
        return self.gate.direct_and_admit(surface, prompt, asked, stream, whole, admitted)

    def generate(self, prompt: Prompt, speed: float | None = None, runs: bool = False,
                 paced_runs: bool = False, key: str = "") -> Iterator[Delta]:
        """The backend's deltas: every surface comes through this one call.
        `runs`: the caller takes TextRuns (every builder does); else each comes as its TextDeltas.
        `paced_runs`: paced TextRuns too, whose chunks' waits the transport keeps (Responses' SSE). `key`: the
        request's line in the worker's queue (its API key)."""
        deltas = self.pacer.pace(self.backend.generate(prompt), prompt, speed,  # speed: None = the server's
                                 runs=paced_runs, key=key)
        return deltas if runs else expand(deltas)

    def stored(self, response_id: str, owner: str) -> StoredResponse | None:
        """A stored response if `owner` may see it: another API key's is as missing as on the real API."""
        record = self.store.get(response_id)
        return record if record is not None and record.owner == owner else None

    def conversation(self, conversation_id: str, owner: str) -> StoredConversation | None:
        """A conversation if `owner` may see it, like `stored`."""
        conversation = self.conversations.get(conversation_id)
        return conversation if conversation is not None and conversation.owner == owner else None

    def hold(self) -> None:
        """Hold this request's writes (Redis) until its answer leaves, and let a JSON answer's admission wait for
        `finish` (a stream's writes are released before its first event; its admission never waits)."""
        if self.batch is not None:
            self.batch.hold(defer=True)

    def finish(self, made: T, make: Callable[[], T], drain: Callable[[T], R]) -> tuple[T, R]:
        """A held JSON answer `made` and drained, its deferred admission and held writes sent to Redis; if the
        fleet's faults or scenario changed meanwhile, nothing was written: made and drained again, under its own."""
        drained = drain(made)
        if self.batch is None or self.batch.commit():
            return made, drained
        made = make()
        return made, drain(made)
