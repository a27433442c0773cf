"""Object ids shaped like the real API's: a type prefix and 48 hex digits."""

import secrets


def new(prefix: str, digits: int = 48) -> str:
    return f"{prefix}_{secrets.token_hex(digits // 2)}"


CHILD_DIGITS = 8


def child(prefix: str, parent_id: str) -> str:
    """An id that also names the item it depends on (a reasoning model's function call names its reasoning item):
    the parent's digits, then some of its own. Opaque to clients, as the real API's ids are."""
    return f"{prefix}_{parent_id.partition('_')[2]}{secrets.token_hex(CHILD_DIGITS // 2)}"


def parent(item_id: str, prefix: str, digits: int = 48) -> str | None:
    """The id of the `prefix` item `item_id` was made a child of (see `child`), or None."""
    own = item_id.partition("_")[2]
    if len(own) != digits + CHILD_DIGITS or any(c not in "0123456789abcdef" for c in own):
        return None
    return f"{prefix}_{own[:digits]}"
