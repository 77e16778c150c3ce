"""The one exception handlers raise to answer with a JSON error, and its response."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse


class ApiError(Exception):
    """Answer `{"error": message, **extra}` with `status` (and headers, e.g. Retry-After)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.extra = extra

    def response(self) -> JSONResponse:
        return JSONResponse({"error": self.message, **self.extra}, status_code=self.status, headers=self.headers)


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)
