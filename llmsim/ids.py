"""Object ids shaped like the real API's: a type prefix and 48 hex digits."""

import secrets


def new(prefix: str, digits: int = 48) -> str:
    return f"{prefix}_{secrets.token_hex(digits // 2)}"
