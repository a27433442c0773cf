"""The OpenAI error envelope, raised anywhere and rendered by one handler."""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """An error the client sees as `{"error": {message, type, param, code}}`."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.cause = cause  # what made it, for a surface whose envelope names it (a store outage's); not in body()
        self.message = message
        self.status = status
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def not_found(kind: str, id: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(f"{kind} with id '{id}' not found.", status=404, param=param, code=code)


def invalid_value(param: str, message: str) -> APIError:
    return APIError(message, param=param, code="invalid_value")


def internal_error() -> APIError:
    """What a request gets for a bug on LLMSim's side: the real API's words, nothing internal."""
    return APIError("The server had an error while processing your request. Sorry about that!", status=500,
                    type="server_error")
