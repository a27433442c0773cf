"""The /conversations endpoints: conversations (create, retrieve, update, delete) and their items."""

from __future__ import annotations

from typing import Any, TypeVar, get_args

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue
from pydantic import Field

from llmsim import ids
from llmsim.api.http import int_arg, json_body, owner, services, strict_params
from llmsim.errors import APIError, not_found
from llmsim.responses import schema, translate
from llmsim.shared import compat
from llmsim.store import ConversationStore, StoredConversation

bp = Blueprint("conversations", __name__)
MAX_ITEMS_PER_CALL = 20
INCLUDABLE = get_args(schema.Includable)


class CreateConversation(schema.Strict):
    items: list[schema.InputItem] | None = None
    metadata: dict[str, str] | None = None


class UpdateConversation(schema.Strict):
    metadata: dict[str, str] | None = Field(...)


class CreateItems(schema.Strict):
    items: list[schema.InputItem]


M = TypeVar("M", bound=schema.Strict)


def _parse(model: type[M], body: Any) -> tuple[M, dict[str, str]]:
    """`body` as `model` under the rule /responses follows (llmsim/shared/compat.py): unknown names and enum
    values dropped and reported in the answer's header, unless strict; and that header."""
    warnings: list[str] | None = None if strict_params() else []
    return schema.parse(model, body, warnings), compat.headers(warnings or [])


def _store() -> ConversationStore:
    return services().pipeline.conversations


def _check_id(conversation_id: str) -> None:
    if not conversation_id.startswith("conv"):
        raise APIError(f"Invalid 'conversation_id': '{conversation_id}'. Expected an ID that begins with 'conv'.",
                       param="conversation_id", code="invalid_value")


def _conversation(conversation_id: str) -> StoredConversation:
    _check_id(conversation_id)
    conversation = services().pipeline.conversation(conversation_id, owner())
    if conversation is None:
        raise not_found("Conversation", conversation_id)
    return conversation


def _items(conversation_id: str) -> list[dict[str, Any]]:
    _conversation(conversation_id)
    items = _store().items(conversation_id)
    if items is None:
        raise not_found("Conversation", conversation_id)
    return items


def _check_count(body: Any) -> None:
    items = body.get("items") if isinstance(body, dict) else None
    if isinstance(items, list) and len(items) > MAX_ITEMS_PER_CALL:
        raise APIError(f"Invalid 'items': array too long. Expected an array with maximum length {MAX_ITEMS_PER_CALL},"
                       f" but got an array with length {len(items)} instead.", param="items",
                       code="array_above_max_length")


def _include() -> frozenset[str]:
    values = request.args.getlist("include") + request.args.getlist("include[]")
    for value in values:
        if value not in INCLUDABLE:
            allowed = ", ".join(f"'{v}'" for v in INCLUDABLE)
            raise APIError(f"Invalid value: '{value}'. Supported values are: {allowed}.", param="include",
                           code="invalid_value")
    return frozenset(values)


def _shown(item: dict[str, Any], include: frozenset[str]) -> dict[str, Any]:
    """An item as listed: logprobs (empty otherwise) and encrypted reasoning only when `include` asks for them."""
    if item["type"] == "reasoning" and "reasoning.encrypted_content" not in include:
        return {k: v for k, v in item.items() if k != "encrypted_content"}
    if item["type"] == "message" and "message.output_text.logprobs" not in include:
        content = [{**part, "logprobs": []} if part.get("type") == "output_text" else part for part in item["content"]]
        return {**item, "content": content}
    return item


def _page(items: list[dict[str, Any]], has_more: bool = False) -> dict[str, Any]:
    return {"object": "list", "data": items, "first_id": items[0]["id"] if items else None,
            "last_id": items[-1]["id"] if items else None, "has_more": has_more}


def _new_items(raw: list[Any] | None, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Input items as stored: each with an id, references resolved against the conversation."""
    return translate.normalize_items(raw or [], history, services().pipeline.store.find_item)


@bp.post("/conversations")
def create() -> ResponseReturnValue:
    body = json_body()
    _check_count(body)
    params, headers = _parse(CreateConversation, body)
    schema.check_metadata(params.metadata)
    conversation = StoredConversation(ids.new("conv"), params.metadata or {}, owner=owner())
    _store().create(conversation, _new_items(params.items, []))
    return jsonify(conversation.public()), headers


@bp.get("/conversations/<conversation_id>")
def retrieve(conversation_id: str) -> ResponseReturnValue:
    return jsonify(_conversation(conversation_id).public())


@bp.post("/conversations/<conversation_id>")
def update(conversation_id: str) -> ResponseReturnValue:
    _conversation(conversation_id)
    params, headers = _parse(UpdateConversation, json_body())
    schema.check_metadata(params.metadata)
    conversation = _store().set_metadata(conversation_id, params.metadata or {})
    if conversation is None:
        raise not_found("Conversation", conversation_id)
    return jsonify(conversation.public()), headers


@bp.delete("/conversations/<conversation_id>")
def delete(conversation_id: str) -> ResponseReturnValue:
    _conversation(conversation_id)
    if not _store().delete(conversation_id):
        raise not_found("Conversation", conversation_id)
    return jsonify({"id": conversation_id, "object": "conversation.deleted", "deleted": True})


@bp.post("/conversations/<conversation_id>/items")
def create_items(conversation_id: str) -> ResponseReturnValue:
    include = _include()
    body = json_body()
    _check_count(body)
    params, headers = _parse(CreateItems, body)
    items = _new_items(params.items, _items(conversation_id))
    if not _store().add_items(conversation_id, items):
        raise not_found("Conversation", conversation_id)
    return jsonify(_page([_shown(item, include) for item in items])), headers


@bp.get("/conversations/<conversation_id>/items")
def list_items(conversation_id: str) -> ResponseReturnValue:
    include = _include()
    limit = int_arg("limit", 20, low=1, high=100)
    order = request.args.get("order", "desc")
    if order not in ("asc", "desc"):
        raise APIError(f"Invalid value: '{order}'. Supported values are: 'asc' and 'desc'.", param="order",
                       code="invalid_value")
    items = _items(conversation_id)
    if order == "desc":
        items.reverse()
    after = request.args.get("after")
    if after:
        position = next((i for i, item in enumerate(items) if item["id"] == after), None)
        if position is None:
            raise not_found("Item", after, param="after")
        items = items[position + 1:]
    return jsonify(_page([_shown(item, include) for item in items[:limit]], has_more=len(items) > limit))


@bp.get("/conversations/<conversation_id>/items/<item_id>")
def retrieve_item(conversation_id: str, item_id: str) -> ResponseReturnValue:
    include = _include()
    item = next((item for item in _items(conversation_id) if item["id"] == item_id), None)
    if item is None:
        raise not_found("Item", item_id)
    return jsonify(_shown(item, include))


@bp.delete("/conversations/<conversation_id>/items/<item_id>")
def delete_item(conversation_id: str, item_id: str) -> ResponseReturnValue:
    conversation = _conversation(conversation_id)
    if not _store().delete_item(conversation_id, item_id):
        raise not_found("Item", item_id)
    return jsonify(conversation.public())
