"""Uploaded files, as OpenAI's `/v1/files` and Anthropic's Files API (beta) show them: one store, two kinds.

A file is kept with its bytes; what a prompt reads of it (`prompt_text`) is its text when it is text, so a
`file_id` in an `input_file` part or a `document` block reaches the model as the file's words.
"""

from __future__ import annotations

import datetime
import mimetypes
import secrets
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmsim.errors import APIError
from llmsim.store.objects import ANTHROPIC_FILE, OPENAI_FILE, ObjectStore, Stored

OPENAI, ANTHROPIC = OPENAI_FILE, ANTHROPIC_FILE  # the store's kinds
PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")  # what an upload may say
OUTPUT_PURPOSE = "batch_output"  # a batch's output and error files
MIN_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS = 3600, 2592000  # expires_after.seconds: 1 hour to 30 days
PROMPT_TEXT_CHARS = 400_000  # of a text file's words, what a prompt reads (the rest is named, not read)
STORAGE_BYTES = 1 << 30  # all files' bytes together, in one store: an upload past it is refused
_ALPHABET = string.ascii_letters + string.digits


def _token(n: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def rfc3339(seconds: float) -> str:
    """A time as Anthropic writes it."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Upload:
    filename: str
    data: bytes
    content_type: str | None = None


class Files:
    """Both providers' files in `store`, each in its owner's scope: another key's file is as missing as none."""

    def __init__(self, store: ObjectStore, max_bytes: int, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self.clock = clock

    # --- OpenAI

    def create_openai(self, owner: str, upload: Upload | None, purpose: str | None,
                      expires_after: dict[str, Any] | None = None) -> dict[str, Any]:
        if upload is None:
            raise APIError("Missing required parameter: 'file'.", param="file", code="missing_required_parameter")
        if not purpose:
            raise APIError("Missing required parameter: 'purpose'.", param="purpose",
                           code="missing_required_parameter")
        if purpose not in PURPOSES:
            raise APIError(f"Invalid value: '{purpose}'. Supported values are: "
                           f"{', '.join(repr(p) for p in PURPOSES)}.", param="purpose", code="invalid_value")
        if purpose == "batch" and not upload.filename.endswith(".jsonl"):
            raise APIError("Invalid file format for Batch API. Must be .jsonl", param="file",
                           code="invalid_file_format")
        now = int(self.clock())
        expires_at = now + _expiry(expires_after) if expires_after else None
        return self.put_openai(owner, upload.filename, upload.data, purpose, now, expires_at)

    def put_openai(self, owner: str, filename: str, data: bytes, purpose: str, now: int | None = None,
                   expires_at: int | None = None, check: bool = True) -> dict[str, Any]:
        """`check`: an upload, bounded; a batch's own output file is not (its lines were)."""
        if check:
            self._check_size(len(data), owner)
        now = int(self.clock()) if now is None else now
        file_id = f"file-{_token(22)}"
        file = {"id": file_id, "object": "file", "bytes": len(data), "created_at": now,
                "filename": filename, "purpose": purpose, "status": "processed", "expires_at": expires_at,
                "status_details": None}
        self.store.put(Stored(OPENAI, file_id, owner, file, self.clock()), data)
        return file

    def openai(self, owner: str, file_id: str) -> dict[str, Any]:
        record = self._visible(OPENAI, owner, file_id)
        if record is None:
            raise APIError(f"No such File object: {file_id}", status=404, param="id")
        return record.fields

    def list_openai(self, owner: str, purpose: str | None, order: str, after: str | None,
                    limit: int) -> dict[str, Any]:
        files = [record.fields for record in self._all(OPENAI, owner)
                 if purpose is None or record.fields["purpose"] == purpose]
        if order == "asc":
            files.reverse()
        page, more = paged(files, after, None, limit)
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": more}

    def delete_openai(self, owner: str, file_id: str) -> dict[str, Any]:
        self.openai(owner, file_id)
        self.store.delete(OPENAI, file_id)
        return {"id": file_id, "object": "file", "deleted": True}

    def openai_content(self, owner: str, file_id: str) -> bytes:
        self.openai(owner, file_id)
        return self.store.content(OPENAI, file_id) or b""

    # --- Anthropic

    def create_anthropic(self, owner: str, upload: Upload | None) -> dict[str, Any]:
        if upload is None:
            raise APIError("file: Field required", param="file")
        self._check_size(len(upload.data), owner)
        mime = upload.content_type if upload.content_type and upload.content_type != "application/octet-stream" \
            else mimetypes.guess_type(upload.filename)[0] or "application/octet-stream"
        now = self.clock()
        file_id = f"file_011{_token(21)}"
        file = {"id": file_id, "type": "file", "filename": upload.filename, "mime_type": mime,
                "size_bytes": len(upload.data), "created_at": rfc3339(now), "downloadable": False}
        self.store.put(Stored(ANTHROPIC, file_id, owner, file, now), upload.data)
        return file

    def anthropic(self, owner: str, file_id: str) -> dict[str, Any]:
        record = self._visible(ANTHROPIC, owner, file_id)
        if record is None:
            raise APIError(f"File not found: {file_id}", status=404)
        return record.fields

    def list_anthropic(self, owner: str, after: str | None, before: str | None, limit: int) -> dict[str, Any]:
        page, more = paged([record.fields for record in self._all(ANTHROPIC, owner)], after, before, limit)
        first, last = (page[0]["id"], page[-1]["id"]) if page else (None, None)
        return {"data": page, "has_more": more, "first_id": first, "last_id": last,
                "next_page": f"page_{last}" if more else None}

    def delete_anthropic(self, owner: str, file_id: str) -> dict[str, Any]:
        self.anthropic(owner, file_id)
        self.store.delete(ANTHROPIC, file_id)
        return {"id": file_id, "type": "file_deleted"}

    def anthropic_content(self, owner: str, file_id: str) -> bytes:
        file = self.anthropic(owner, file_id)
        if not file.get("downloadable"):
            raise APIError(f"File {file_id} is not downloadable: only files the model created can be downloaded.")
        return self.store.content(ANTHROPIC, file_id) or b""

    # --- what a prompt reads

    def prompt_text(self, kind: str, owner: str, file_id: str) -> str | None:
        """A file's words for a prompt: its text (the first PROMPT_TEXT_CHARS), or a note naming it when it is not
        text; None when there is no such file in `owner`'s scope."""
        record = self._visible(kind, owner, file_id)
        if record is None:
            return None
        data = self.store.content(kind, file_id) or b""
        name = record.fields.get("filename", file_id)
        try:
            text = data[:PROMPT_TEXT_CHARS * 4].decode()[:PROMPT_TEXT_CHARS]
        except UnicodeDecodeError:
            return f"[file {name}]"
        return text if "\x00" not in text else f"[file {name}]"

    # --- shared

    def _visible(self, kind: str, owner: str, file_id: str) -> Stored | None:
        record = self.store.get(kind, file_id)
        if record is None or record.owner != owner:
            return None
        expires_at = record.fields.get("expires_at")
        if isinstance(expires_at, int) and expires_at <= self.clock():
            return None
        return record

    def _all(self, kind: str, owner: str) -> list[Stored]:
        now = self.clock()
        return [record for record in self.store.listed(kind, owner)
                if not (isinstance(record.fields.get("expires_at"), int) and record.fields["expires_at"] <= now)]

    def _check_size(self, size: int, owner: str) -> None:
        if size > self.max_bytes:
            raise APIError(f"File too large: {size} bytes; the limit is {self.max_bytes} bytes.", status=413,
                           param="file", code="file_too_large")
        stored = sum(int(record.fields.get("bytes", record.fields.get("size_bytes", 0)))
                     for kind in (OPENAI, ANTHROPIC) for record in self.store.listed(kind, None))
        if stored + size > STORAGE_BYTES:
            raise APIError(f"File storage is full: {stored} of {STORAGE_BYTES} bytes are used. Delete files to "
                           "upload more.", param="file", code="storage_limit_exceeded")


def _expiry(expires_after: dict[str, Any]) -> int:
    anchor, seconds = expires_after.get("anchor"), expires_after.get("seconds")
    if anchor != "created_at":
        raise APIError(f"Invalid value: '{anchor}'. Supported values are: 'created_at'.",
                       param="expires_after[anchor]", code="invalid_value")
    try:
        value = int(seconds)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = -1
    if not MIN_EXPIRY_SECONDS <= value <= MAX_EXPIRY_SECONDS:
        raise APIError(f"Invalid 'expires_after[seconds]': expected a value between {MIN_EXPIRY_SECONDS} and "
                       f"{MAX_EXPIRY_SECONDS}, but got {seconds} instead.", param="expires_after[seconds]",
                       code="invalid_value")
    return value


def paged(items: list[dict[str, Any]], after: str | None, before: str | None,
          limit: int) -> tuple[list[dict[str, Any]], bool]:
    """A page of `items` (in the list's order) after the one with id `after`, or before `before`; whether more
    lie beyond it. An id that is not in the list starts nowhere: an empty page."""
    if after is not None:
        position = next((i for i, item in enumerate(items) if item["id"] == after), None)
        rest = [] if position is None else items[position + 1:]
        return rest[:limit], len(rest) > limit
    if before is not None:
        position = next((i for i, item in enumerate(items) if item["id"] == before), None)
        rest = [] if position is None else items[:position]
        return rest[-limit:], len(rest) > limit
    return items[:limit], len(items) > limit
