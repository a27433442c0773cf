"""OpenAI's `/v1/batches`: a batch made from an uploaded JSONL file of requests to one endpoint, run by the job
runner (llmsim/jobs/runner.py), its results in an output file and an error file (purpose `batch_output`).

The bounds (lines, bytes per line) are checked when the batch is made: a clear 400 at once. What the live API finds
while `validating` (a line that is not JSON, lacks a field, names another URL, repeats a custom_id) fails the batch
with its `errors`, as it does there.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from llmsim.errors import APIError
from llmsim.jobs import dispatch
from llmsim.jobs.dispatch import Reply
from llmsim.jobs.files import OUTPUT_PURPOSE, Files, paged
from llmsim.jobs.runner import CANCEL, STATE, WINDOW_SECONDS, Invalid, Line, Runner, Tally, ordered
from llmsim.request import ApiRequest
from llmsim.responses.schema import check_metadata
from llmsim.store.objects import Stored

KIND = "batch"
ENDPOINTS = ("/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/moderations",
             "/v1/images/generations", "/v1/images/edits", "/v1/videos")  # what the API takes (the SDK's list)
MAX_LINES = 50_000  # requests in one batch, as the live API allows
MAX_LINE_BYTES = 4 * 1024 * 1024  # one request line of the input file
MAX_ERRORS = 100  # validation errors reported for one failed batch
EXPIRED = {"code": "batch_expired",
           "message": "This request could not be executed before the completion window expired."}


class OpenAIBatches:
    kind = KIND
    validates = True

    def __init__(self, files: Files, runner: Runner, loads: Callable[[str], Any] = json.loads) -> None:
        """`loads`: how a line's JSON is read (the transport's strict decoder: no NaN, no lone surrogates, no
        nesting past its depth), raising ValueError or APIError for what it refuses."""
        self.files = files
        self.runner = runner
        self.store = runner.store
        self.loads = loads

    # --- the routes' side

    def create(self, asked: ApiRequest) -> dict[str, Any]:
        body = asked.body
        if not isinstance(body, dict):
            raise APIError("Invalid request body: expected a JSON object.", code="invalid_type")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if body.get(name) is None:
                raise APIError(f"Missing required parameter: '{name}'.", param=name,
                               code="missing_required_parameter")
        endpoint, window = body["endpoint"], body["completion_window"]
        if endpoint not in ENDPOINTS:
            raise APIError(f"Invalid value: '{endpoint}'. Supported values are: "
                           f"{', '.join(repr(e) for e in ENDPOINTS)}.", param="endpoint", code="invalid_value")
        if not dispatch.served(endpoint):
            raise APIError(f"This server does not run batches for '{endpoint}' yet: use one of "
                           f"{', '.join(repr(e) for e in ENDPOINTS if dispatch.served(e))}.", param="endpoint",
                           code="unsupported_value")
        if window != "24h":
            raise APIError(f"Invalid value: '{window}'. Supported values are: '24h'.", param="completion_window",
                           code="invalid_value")
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise APIError("Invalid type for 'metadata': expected an object.", param="metadata", code="invalid_type")
        check_metadata(metadata)
        file = self.files.openai(asked.owner, str(body["input_file_id"]))
        if file["purpose"] != "batch":
            raise APIError(f"The input file {file['id']} must have purpose 'batch', not '{file['purpose']}'.",
                           param="input_file_id", code="invalid_value")
        self._check_bounds(self.files.openai_content(asked.owner, file["id"]))
        now = int(self.runner.clock())
        batch_id = f"batch_{secrets.token_hex(16)}"
        batch = {"id": batch_id, "object": "batch", "endpoint": endpoint, "errors": None,
                 "input_file_id": file["id"], "completion_window": window, "status": "validating",
                 "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                 "expires_at": now + WINDOW_SECONDS, "finalizing_at": None, "completed_at": None, "failed_at": None,
                 "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                 "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": metadata,
                 "model": None, "usage": None, "_expires_at": now + WINDOW_SECONDS,
                 "_output_expires_after": body.get("output_expires_after")}
        record = Stored(KIND, batch_id, asked.owner, {**batch, **self.runner.new_fields(asked, "validating")},
                        self.runner.clock())
        self.store.put(record)
        self.runner.start(self, record.id, asked.api_key)
        return public(record.fields)

    @staticmethod
    def _check_bounds(data: bytes) -> None:
        count = 0
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise APIError(f"Line {number} of the input file is {len(raw)} bytes; a request line may be at most "
                               f"{MAX_LINE_BYTES} bytes.", param="input_file_id", code="line_too_large")
            count += bool(raw.strip())
        if count > MAX_LINES:
            raise APIError(f"The input file has {count} requests; a batch may have at most {MAX_LINES}.",
                           param="input_file_id", code="too_many_requests")

    def retrieve(self, owner: str, batch_id: str) -> dict[str, Any]:
        return public(self._record(owner, batch_id).fields)

    def cancel(self, owner: str, batch_id: str) -> dict[str, Any]:
        record = self._record(owner, batch_id)
        status = record.fields["status"]
        if status in ("completed", "failed", "expired", "cancelled"):
            raise APIError(f"Cannot cancel a batch with status '{status}'.", status=409)
        if not record.fields.get(CANCEL):
            record = self.store.update(KIND, batch_id, {CANCEL: self.runner.clock(),
                                                        "cancelling_at": int(self.runner.clock())}) or record
        return public(record.fields)

    def page(self, owner: str, after: str | None, limit: int) -> dict[str, Any]:
        batches = [public(self.runner.adopt(self, record).fields) for record in self.store.listed(KIND, owner)]
        page, more = paged(batches, after, None, limit)
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": more}

    def _record(self, owner: str, batch_id: str) -> Stored:
        record = self.store.get(KIND, batch_id)
        if record is None or record.owner != owner:
            raise APIError(f"No batch found with id '{batch_id}'.", status=404, param="batch_id")
        return self.runner.adopt(self, record)

    # --- the runner's side (llmsim/jobs/runner.py `Kind`)

    def lines(self, record: Stored) -> list[Line]:
        data = self.store.content("file", record.fields["input_file_id"])
        if data is None:
            raise Invalid([_error("file_not_found", f"The input file {record.fields['input_file_id']} is gone.")])
        lines: list[Line] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        endpoint = record.fields["endpoint"]
        for number, raw in enumerate(data.decode(errors="replace").split("\n"), start=1):
            if not raw.strip():
                continue
            try:
                request = self.loads(raw)
            except (ValueError, APIError, RecursionError):
                errors.append(_error("invalid_json_line", f"Line {number} is not valid JSON.", number))
                continue
            problem = _problem(request, endpoint, seen)
            if problem is not None:
                errors.append(_error(problem[0], problem[1], number, problem[2]))
                continue
            seen.add(request["custom_id"])
            lines.append(Line(len(lines), request["custom_id"], endpoint, {**request["body"], "stream": False}))
        if not lines and not errors:
            errors.append(_error("empty_file", "The input file has no requests."))
        if errors:
            raise Invalid(errors[:MAX_ERRORS])
        return lines

    def result(self, line: Line, reply: Reply) -> tuple[str, str, dict[str, int] | None]:
        ok = reply.status < 300
        text = json.dumps({"id": f"batch_req_{secrets.token_hex(16)}", "custom_id": line.custom_id,
                           "response": {"status_code": reply.status, "request_id": reply.request_id,
                                        "body": reply.body},
                           "error": None}, separators=(",", ":"), ensure_ascii=False)
        return text, "completed" if ok else "failed", _usage(reply.body) if ok else None

    def unrun(self, line: Line, why: str) -> tuple[str, str] | None:
        if why != "expired":  # a cancelled batch's requests not run have no result line
            return None
        text = json.dumps({"id": f"batch_req_{secrets.token_hex(16)}", "custom_id": line.custom_id,
                           "response": None, "error": EXPIRED}, separators=(",", ":"))
        return text, "failed"

    def category(self, text: str) -> tuple[str, dict[str, int] | None]:
        line = json.loads(text)
        response = line.get("response")
        if response is None or response.get("status_code", 500) >= 300:
            return "failed", None
        return "completed", _usage(response.get("body"))

    def started(self, record: Stored, lines: list[Line], now: float) -> dict[str, Any]:
        model = next((line.body.get("model") for line in lines if isinstance(line.body.get("model"), str)), None)
        return {"status": "in_progress", "in_progress_at": int(now), "model": model,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}

    def progress(self, record: Stored, tally: Tally) -> dict[str, Any]:
        total = record.fields["request_counts"]["total"]
        return {"request_counts": {"total": total, "completed": tally.counts.get("completed", 0),
                                   "failed": tally.counts.get("failed", 0)}}

    def finalizing(self, record: Stored, now: float) -> dict[str, Any]:
        return {"status": "finalizing", "finalizing_at": int(now)} if record.fields["status"] != "cancelling" else {}

    def ended(self, record: Stored, outcome: str, results: dict[int, str], tally: Tally,
              now: float) -> dict[str, Any]:
        output: list[str] = []
        errors: list[str] = []
        for text in ordered(results):
            (output if self.category(text)[0] == "completed" else errors).append(text)
        expiry = record.fields.get("_output_expires_after")
        expires_at = int(now) + int(expiry["seconds"]) if isinstance(expiry, dict) and expiry.get("seconds") else None
        files = {}
        for name, lines in (("output", output), ("error", errors)):
            if lines:
                data = ("\n".join(lines) + "\n").encode()
                file = self.files.put_openai(record.owner, f"batch_{record.id}_{name}.jsonl", data, OUTPUT_PURPOSE,
                                             expires_at=expires_at, check=False)
                files[f"{name}_file_id"] = file["id"]
        stamp = {"completed": "completed_at", "cancelled": "cancelled_at", "expired": "expired_at"}[outcome]
        return {**files, **self.progress(record, tally), "status": outcome, stamp: int(now),
                "usage": _batch_usage(tally.usage)}

    def failed(self, record: Stored, errors: list[dict[str, Any]], now: float) -> dict[str, Any]:
        return {"status": "failed", "failed_at": int(now), "errors": {"object": "list", "data": errors}}


def public(fields: dict[str, Any]) -> dict[str, Any]:
    """The Batch object: its fields without the runner's, `cancelling` from the cancel until the batch ends."""
    batch = {name: value for name, value in fields.items() if not name.startswith("_")}
    if fields.get(CANCEL) and fields.get(STATE) != "ended":
        batch["status"] = "cancelling"
    return batch


def _error(code: str, message: str, line: int | None = None, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": param, "line": line}


def _problem(request: Any, endpoint: str, seen: set[str]) -> tuple[str, str, str | None] | None:
    """What is wrong with one request line, as (code, message, param); None: nothing."""
    if not isinstance(request, dict):
        return "invalid_request", "A request line must be a JSON object.", None
    for name in ("custom_id", "method", "url", "body"):
        if name not in request:
            return "missing_required_parameter", f"Missing required parameter: '{name}'.", name
    if not isinstance(request["custom_id"], str):
        return "invalid_type", "Invalid type for 'custom_id': expected a string.", "custom_id"
    if request["custom_id"] in seen:
        return "duplicate_custom_id", f"The custom_id '{request['custom_id']}' is used more than once.", "custom_id"
    if request["method"] != "POST":
        return "invalid_method", f"Invalid method '{request['method']}': only 'POST' is supported.", "method"
    if request["url"] != endpoint:
        return ("mismatched_url", f"The url '{request['url']}' does not match the batch's endpoint '{endpoint}'.",
                "url")
    if not isinstance(request["body"], dict):
        return "invalid_type", "Invalid type for 'body': expected an object.", "body"
    return None


def _usage(body: Any) -> dict[str, int] | None:
    """A line's token usage, in the Responses API's terms (a chat completion's named as those)."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None
    inputs = usage.get("input_tokens", usage.get("prompt_tokens", 0))
    outputs = usage.get("output_tokens", usage.get("completion_tokens", 0))
    input_details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details") or {}
    output_details = usage.get("output_tokens_details") or usage.get("completion_tokens_details") or {}
    return {"input_tokens": int(inputs or 0), "output_tokens": int(outputs or 0),
            "cached_tokens": int(input_details.get("cached_tokens") or 0),
            "reasoning_tokens": int(output_details.get("reasoning_tokens") or 0)}


def _batch_usage(usage: dict[str, int]) -> dict[str, Any]:
    inputs, outputs = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    return {"input_tokens": inputs, "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)},
            "output_tokens": outputs, "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
            "total_tokens": inputs + outputs}
