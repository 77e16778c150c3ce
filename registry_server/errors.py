"""The one exception handlers raise to answer with a JSON error, and its response."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse


class _AsciiJSON(JSONResponse):
    """JSON with every non-ASCII character escaped: an error may quote input holding a lone surrogate, which
    UTF-8 cannot encode (`\\ud83d` is valid JSON text; the raw character would make the answer a 500)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


class ApiError(Exception):
    """Answer `{"error": message, **extra}` with `status` (and headers, e.g. Retry-After)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.extra = extra

    def response(self) -> JSONResponse:
        return _AsciiJSON({"error": self.message, **self.extra}, status_code=self.status, headers=self.headers)


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return _AsciiJSON({"error": message}, status_code=status, headers=headers)
