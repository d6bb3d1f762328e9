"""Errors in OpenAI's shape: {"error": {"message", "type", "code"}} with the matching status."""
from __future__ import annotations

from starlette.responses import JSONResponse


class ApiError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 code: str | None = None, headers: dict[str, str] | None = None,
                 extra: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict:
        error = {"message": self.message, "type": self.type, "code": self.code, "param": None}
        error.update(self.extra)
        return {"error": error}

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status,
                            headers={**self.headers, **(headers or {})})


def bad_request(message: str, code: str | None = None) -> ApiError:
    return ApiError(400, message, "invalid_request_error", code)


def model_not_found(name: str | None) -> ApiError:
    shown = name if name is not None else "auto"
    return ApiError(404, f"The model '{shown}' does not exist and no routing rule matched the request",
                    "invalid_request_error", "model_not_found")


def unavailable(message: str, code: str = "model_unavailable", retry_after: int | None = None) -> ApiError:
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    return ApiError(503, message, "server_error", code, headers=headers)


def queue_full(model: str, retry_after: int = 1) -> ApiError:
    return ApiError(429, f"The queue of model '{model}' is full; retry later",
                    "rate_limit_error", "queue_full", headers={"Retry-After": str(retry_after)})


def queue_timeout(model: str, waited_ms: int) -> ApiError:
    return ApiError(503, f"Waited {waited_ms} ms for a slot on model '{model}'; gave up",
                    "server_error", "queue_timeout", headers={"Retry-After": "1"})


def context_exceeded(message: str, n_prompt_tokens: int | None = None,
                     n_ctx: int | None = None) -> ApiError:
    """A prompt longer than the model's context: OpenAI's code, llama-server's type and counts
    (its clients read n_prompt_tokens and n_ctx to cut the prompt; the OpenAI SDK maps by status)."""
    extra = {"n_prompt_tokens": n_prompt_tokens, "n_ctx": n_ctx} if n_prompt_tokens else {}
    return ApiError(400, message, "exceed_context_size_error", "context_length_exceeded",
                    extra=extra)
