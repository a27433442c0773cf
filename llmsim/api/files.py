"""/v1/files: OpenAI's Files API, and Anthropic's (beta) where the request is the anthropic SDK's (its
`anthropic-version` or `anthropic-beta` header) or comes under /anthropic/v1: the HTTP side of llmsim/jobs/files.py."""

from __future__ import annotations

from collections.abc import Callable

from flask import Blueprint, Flask, Response, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api import which
from llmsim.api.http import int_arg, owner, services
from llmsim.errors import APIError
from llmsim.jobs.files import Files, Upload
from llmsim.jobs.service import Jobs
from llmsim.messages.surface import MESSAGES

bp = Blueprint("files", __name__)
anthropic_bp = Blueprint("anthropic_files", __name__)  # under /anthropic/v1: Anthropic's only


def mount(app: Flask) -> None:
    for prefix in MESSAGES.exclusive_prefixes:
        name = f"anthropic_files{prefix.replace('/', '_')}"
        app.register_blueprint(anthropic_bp, url_prefix=prefix, name=name)
        which.mounted(name, MESSAGES)  # Anthropic's envelope and headers


def jobs() -> Jobs:
    found = services().jobs
    assert found is not None
    return found


def files() -> Files:
    return jobs().files


def _anthropic() -> bool:
    return "anthropic-version" in request.headers or "files-api" in request.headers.get("anthropic-beta", "")


def _either(openai: Callable[[], ResponseReturnValue], anthropic: Callable[[], ResponseReturnValue]
            ) -> ResponseReturnValue:
    """OpenAI's view, or Anthropic's for the anthropic SDK's request (then in Anthropic's envelope and headers)."""
    if not _anthropic():
        return openai()
    which.claim(MESSAGES)
    return anthropic()


def _upload() -> Upload | None:
    sent = request.files.get("file")
    if sent is None:
        return None
    return Upload(sent.filename or "file", sent.read(), sent.mimetype or None)


@bp.post("/files")
def create() -> ResponseReturnValue:
    return _either(_create_openai, _create_anthropic)


def _create_openai() -> ResponseReturnValue:
    if not request.mimetype.startswith("multipart/form-data"):
        raise APIError(f"Invalid Content-Type header ({request.content_type}), expected multipart/form-data.",
                       status=415, code="unsupported_content_type")
    anchor, seconds = request.form.get("expires_after[anchor]"), request.form.get("expires_after[seconds]")
    expires_after = {"anchor": anchor, "seconds": seconds} if anchor is not None or seconds is not None else None
    return jsonify(files().create_openai(owner(), _upload(), request.form.get("purpose"), expires_after))


@bp.get("/files")
def list_files() -> ResponseReturnValue:
    return _either(lambda: jsonify(files().list_openai(
        owner(), request.args.get("purpose"), _order(), request.args.get("after"),
        int_arg("limit", 10000, low=1, high=10000))), _list_anthropic)


@bp.get("/files/<file_id>")
def retrieve(file_id: str) -> ResponseReturnValue:
    return _either(lambda: jsonify(files().openai(owner(), file_id)),
                   lambda: _retrieve_anthropic(file_id))


@bp.delete("/files/<file_id>")
def delete(file_id: str) -> ResponseReturnValue:
    return _either(lambda: jsonify(files().delete_openai(owner(), file_id)),
                   lambda: _delete_anthropic(file_id))


@bp.get("/files/<file_id>/content")
def content(file_id: str) -> ResponseReturnValue:
    return _either(lambda: _bytes(files().openai_content(owner(), file_id)),
                   lambda: _content_anthropic(file_id))


def _order() -> str:
    order = request.args.get("order", "desc")
    if order not in ("asc", "desc"):
        raise APIError(f"Invalid value: '{order}'. Supported values are: 'asc' and 'desc'.", param="order",
                       code="invalid_value")
    return order


def _bytes(data: bytes) -> Response:
    return Response(data, mimetype="application/octet-stream")


# Anthropic's, under /anthropic/v1 and (by its headers) /v1


@anthropic_bp.post("/files")
def create_anthropic() -> ResponseReturnValue:
    return _create_anthropic()


@anthropic_bp.get("/files")
def list_anthropic() -> ResponseReturnValue:
    return _list_anthropic()


@anthropic_bp.get("/files/<file_id>")
def retrieve_anthropic(file_id: str) -> ResponseReturnValue:
    return _retrieve_anthropic(file_id)


@anthropic_bp.delete("/files/<file_id>")
def delete_anthropic(file_id: str) -> ResponseReturnValue:
    return _delete_anthropic(file_id)


@anthropic_bp.get("/files/<file_id>/content")
def content_anthropic(file_id: str) -> ResponseReturnValue:
    return _content_anthropic(file_id)


def _create_anthropic() -> ResponseReturnValue:
    if not request.mimetype.startswith("multipart/form-data"):
        raise APIError(f"Invalid Content-Type header ({request.content_type}), expected multipart/form-data.",
                       status=415)
    return jsonify(files().create_anthropic(owner(), _upload()))


def _list_anthropic() -> ResponseReturnValue:
    page = request.args.get("page")
    after = page.removeprefix("page_") if page else request.args.get("after_id")
    return jsonify(files().list_anthropic(owner(), after, request.args.get("before_id"),
                                          int_arg("limit", 20, low=1, high=1000)))


def _retrieve_anthropic(file_id: str) -> ResponseReturnValue:
    return jsonify(files().anthropic(owner(), file_id))


def _delete_anthropic(file_id: str) -> ResponseReturnValue:
    return jsonify(files().delete_anthropic(owner(), file_id))


def _content_anthropic(file_id: str) -> ResponseReturnValue:
    return _bytes(files().anthropic_content(owner(), file_id))

