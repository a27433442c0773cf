"""Anthropic's Message Batches (`/v1/messages/batches`): requests given in the body, each run by the job runner
(llmsim/jobs/runner.py) as a `POST /v1/messages`, their results read back as JSONL once the batch has ended.

The bounds (requests per batch, bytes per request) and the `custom_id`s are checked when the batch is made; a
request's `params` are checked when it runs, as the live API does: a bad one is an `errored` result.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from llmsim.errors import APIError
from llmsim.jobs.dispatch import Reply
from llmsim.jobs.files import paged, rfc3339
from llmsim.jobs.runner import CANCEL, STATE, WINDOW_SECONDS, Line, Runner, Tally, ordered
from llmsim.request import ApiRequest
from llmsim.store.objects import Stored

KIND = "message_batch"
URL = "/v1/messages"
MAX_REQUESTS = 100_000  # requests in one batch, as the live API allows
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # one request's params, as JSON
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CATEGORIES = ("succeeded", "errored", "canceled", "expired")


class MessageBatches:
    kind = KIND
    validates = False

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.store = runner.store

    # --- the routes' side

    def create(self, asked: ApiRequest, base_url: str) -> dict[str, Any]:
        requests = _requests(asked.body)
        now = self.runner.clock()
        batch_id = f"msgbatch_01{secrets.token_hex(12)}"
        batch = {"id": batch_id, "type": "message_batch",
                 "processing_status": "in_progress", "request_counts": _counts(len(requests), Tally()),
                 "ended_at": None, "created_at": rfc3339(now), "expires_at": rfc3339(now + WINDOW_SECONDS),
                 "archived_at": None, "cancel_initiated_at": None, "results_url": None,
                 "_total": len(requests), "_expires_at": now + WINDOW_SECONDS}
        content = "\n".join(json.dumps(request, separators=(",", ":"), ensure_ascii=False) for request in requests)
        record = Stored(KIND, batch_id, asked.owner, {**batch, **self.runner.new_fields(asked, "in_progress")},
                        now)
        self.store.put(record, content.encode())
        self.runner.start(self, record.id, asked.api_key)
        return public(record.fields, base_url)

    def retrieve(self, owner: str, batch_id: str, base_url: str) -> dict[str, Any]:
        return public(self._record(owner, batch_id).fields, base_url)

    def cancel(self, owner: str, batch_id: str, base_url: str) -> dict[str, Any]:
        record = self._record(owner, batch_id)
        if record.fields.get(STATE) != "ended" and not record.fields.get(CANCEL):
            now = self.runner.clock()
            record = self.store.update(KIND, batch_id, {CANCEL: now, "cancel_initiated_at": rfc3339(now)}) or record
        return public(record.fields, base_url)

    def delete(self, owner: str, batch_id: str) -> dict[str, Any]:
        record = self._record(owner, batch_id)
        if record.fields.get(STATE) != "ended":
            raise APIError(f"Message Batch {batch_id} cannot be deleted while it is processing: cancel it first, "
                           "then delete it once it has ended.")
        self.store.delete(KIND, batch_id)
        return {"id": batch_id, "type": "message_batch_deleted"}

    def page(self, owner: str, after: str | None, before: str | None, limit: int, base_url: str) -> dict[str, Any]:
        batches = [public(self.runner.adopt(self, record).fields, base_url)
                   for record in self.store.listed(KIND, owner)]
        page, more = paged(batches, after, before, limit)
        return {"data": page, "has_more": more, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None}

    def results(self, owner: str, batch_id: str) -> str:
        """The results as JSONL, in the requests' order."""
        record = self._record(owner, batch_id)
        if record.fields.get(STATE) != "ended":
            raise APIError(f"Message Batch {batch_id} has not ended yet: its results can be read once its "
                           "processing_status is 'ended'.")
        return "".join(line + "\n" for line in ordered(self.store.lines(KIND, batch_id)))

    def _record(self, owner: str, batch_id: str) -> Stored:
        record = self.store.get(KIND, batch_id)
        if record is None or record.owner != owner:
            raise APIError(f"Message Batch not found: {batch_id}", status=404)
        return self.runner.adopt(self, record)

    # --- the runner's side (llmsim/jobs/runner.py `Kind`)

    def lines(self, record: Stored) -> list[Line]:
        data = self.store.content(KIND, record.id) or b""
        lines = []
        for index, raw in enumerate(data.decode().split("\n") if data else []):
            request = json.loads(raw)
            lines.append(Line(index, request["custom_id"], URL, {**request["params"], "stream": False}))
        return lines

    def result(self, line: Line, reply: Reply) -> tuple[str, str, dict[str, int] | None]:
        if reply.status < 300:
            result = {"type": "succeeded", "message": reply.body}
        else:
            result = {"type": "errored", "error": reply.body}
        return _line(line.custom_id, result), result["type"], None

    def unrun(self, line: Line, why: str) -> tuple[str, str] | None:
        kind = "canceled" if why == "cancelled" else "expired"
        return _line(line.custom_id, {"type": kind}), kind

    def category(self, text: str) -> tuple[str, dict[str, int] | None]:
        return str(json.loads(text)["result"]["type"]), None

    def started(self, record: Stored, lines: list[Line], now: float) -> dict[str, Any]:
        return {}

    def progress(self, record: Stored, tally: Tally) -> dict[str, Any]:
        return {"request_counts": _counts(int(record.fields["_total"]), tally)}

    def finalizing(self, record: Stored, now: float) -> dict[str, Any]:
        return {}

    def ended(self, record: Stored, outcome: str, results: dict[int, str], tally: Tally,
              now: float) -> dict[str, Any]:
        return {"processing_status": "ended", "ended_at": rfc3339(now), **self.progress(record, tally)}

    def failed(self, record: Stored, errors: list[dict[str, Any]], now: float) -> dict[str, Any]:
        return {"processing_status": "ended", "ended_at": rfc3339(now)}


def public(fields: dict[str, Any], base_url: str) -> dict[str, Any]:
    """The MessageBatch object: `canceling` from the cancel until it ends; `results_url` (on this server) once it
    has ended."""
    batch = {name: value for name, value in fields.items() if not name.startswith("_")}
    ended = fields.get(STATE) == "ended"
    if fields.get(CANCEL) and not ended:
        batch["processing_status"] = "canceling"
    batch["results_url"] = f"{base_url}/messages/batches/{fields['id']}/results" if ended else None
    return batch


def _counts(total: int, tally: Tally) -> dict[str, int]:
    counts = {name: tally.counts.get(name, 0) for name in CATEGORIES}
    return {"processing": total - sum(counts.values()), **counts}


def _line(custom_id: str, result: dict[str, Any]) -> str:
    return json.dumps({"custom_id": custom_id, "result": result}, separators=(",", ":"), ensure_ascii=False)


def _requests(body: Any) -> list[dict[str, Any]]:
    """The batch's requests, checked: a list of 1 to MAX_REQUESTS, each a unique `custom_id` and its `params`."""
    if not isinstance(body, dict):
        raise APIError("Invalid request body: expected a JSON object.")
    requests = body.get("requests")
    if requests is None:
        raise APIError("requests: Field required")
    if not isinstance(requests, list):
        raise APIError("requests: Input should be a valid list")
    if not requests:
        raise APIError("requests: List should have at least 1 item after validation, not 0")
    if len(requests) > MAX_REQUESTS:
        raise APIError(f"requests: a batch may have at most {MAX_REQUESTS} requests, not {len(requests)}.")
    seen: set[str] = set()
    checked = []
    for index, request in enumerate(requests):
        where = f"requests.{index}"
        if not isinstance(request, dict):
            raise APIError(f"{where}: Input should be a valid dictionary")
        custom_id, params = request.get("custom_id"), request.get("params")
        if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
            raise APIError(f"{where}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'")
        if custom_id in seen:
            raise APIError(f"Duplicate custom_id: '{custom_id}'. Each request in a batch needs its own custom_id.")
        if not isinstance(params, dict):
            raise APIError(f"{where}.params: Input should be a valid dictionary")
        size = len(json.dumps(params, separators=(",", ":")).encode())
        if size > MAX_REQUEST_BYTES:
            raise APIError(f"{where}.params: {size} bytes; a request may be at most {MAX_REQUEST_BYTES} bytes.",
                           status=413)
        seen.add(custom_id)
        checked.append({"custom_id": custom_id, "params": params})
    return checked
