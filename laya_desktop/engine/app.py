"""The engine's ASGI app: routes, OpenAI-shaped errors, the API key check, start and stop."""
from __future__ import annotations

import contextlib
import hmac
import logging

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from laya_desktop.engine import admin_api, route_admin, semantic_admin, serving, telemetry_api
from laya_desktop.engine.apis.chat import CHAT, COMPLETIONS
from laya_desktop.engine.apis.embeddings import EMBEDDINGS
from laya_desktop.engine.apis.messages import MESSAGES
from laya_desktop.engine.apis.responses import RESPONSES, delete_response, retrieve_response
from laya_desktop.engine.core import Engine
from laya_desktop.engine.errors import ApiError

log = logging.getLogger("laya.engine")

OPEN_PATHS = {"/healthz"}


def _is_admin(path: str) -> bool:
    return path == "/metrics" or path.startswith("/admin/")


def error_for_path(path: str, error: ApiError, headers: dict[str, str] | None = None):
    """An error in the shape of the API that `path` belongs to (Anthropic's under /v1/messages)."""
    if path.startswith("/v1/messages"):
        from laya_desktop.engine.apis.messages import MESSAGES
        return MESSAGES.error_response(error, headers)
    return error.response(headers)


def _given_key(headers: dict[bytes, bytes]) -> bytes:
    auth = headers.get(b"authorization", b"")
    if auth[:7].lower() == b"bearer ":
        return auth[7:].strip()
    # Anthropic's clients (Claude Code, the anthropic SDK) send the key as x-api-key.
    return headers.get(b"x-api-key", b"").strip()


def _key_matches(given: bytes, key: str | None) -> bool:
    # compare_digest's time does not depend on where the bytes differ; it does leak the length.
    return key is not None and hmac.compare_digest(given, key.encode())


class ApiKeyMiddleware:
    """With server.api_key set, everything but /healthz needs `Authorization: Bearer <key>` (or
    `x-api-key: <key>`). With server.admin_api_key set, /admin/* and /metrics need that key and
    api_key no longer opens them; the admin key opens the model APIs too (one key for the GUI)."""

    def __init__(self, app: ASGIApp, engine: Engine):
        self.app = app
        self.engine = engine

    def _allowed(self, path: str, given: bytes) -> bool:
        server = self.engine.config.server
        admin_key = server.admin_api_key
        if _is_admin(path):
            wanted = [admin_key] if admin_key else [server.api_key]
        else:
            wanted = [server.api_key, admin_key] if server.api_key else []
        wanted = [k for k in wanted if k]
        if not wanted:
            return True
        # every key is compared, so the time taken does not tell which one nearly matched
        return any([_key_matches(given, k) for k in wanted])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = self.engine.config.server
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or not (
                server.api_key or server.admin_api_key):   # no key to check: no headers to read
            await self.app(scope, receive, send)
            return
        given = _given_key(dict(scope["headers"]))
        if self._allowed(scope["path"], given):
            await self.app(scope, receive, send)
            return
        which = "admin API key" if _is_admin(scope["path"]) and \
            self.engine.config.server.admin_api_key else "API key"
        error = ApiError(401, f"missing or wrong {which}: send 'Authorization: Bearer <key>' or "
                         "'x-api-key: <key>'", "invalid_request_error", "invalid_api_key")
        response = error_for_path(scope["path"], error, {"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


async def _api_error(request: Request, exc: ApiError):
    return error_for_path(request.url.path, exc)


async def _http_error(request: Request, exc: HTTPException):
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    error = ApiError(exc.status_code, str(exc.detail), "invalid_request_error", code)
    return error_for_path(request.url.path, error, exc.headers)


async def _unexpected(request: Request, exc: Exception):
    log.exception("unhandled error on %s", request.url.path)
    error = ApiError(500, f"internal error: {type(exc).__name__}", "server_error", "internal_error")
    # Starlette re-raises after this answer and uvicorn then drops the connection; without
    # `Connection: close` a keep-alive client sends its next request into the closed socket and
    # gets a reset instead of a status (issue 12).
    return error_for_path(request.url.path, error, {"Connection": "close"})


def create_app(engine: Engine) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        await engine.start()
        try:
            yield
        finally:
            await engine.stop()

    routes = [
        Route("/healthz", admin_api.healthz, methods=["GET"]),
        Route("/v1/chat/completions", serving.endpoint(CHAT), methods=["POST"]),
        Route("/v1/completions", serving.endpoint(COMPLETIONS), methods=["POST"]),
        Route("/v1/embeddings", serving.endpoint(EMBEDDINGS), methods=["POST"]),
        Route("/v1/models", serving.list_models, methods=["GET"]),
        Route("/v1/models/{name:path}", serving.get_model, methods=["GET"]),
        Route("/admin/config", admin_api.get_config, methods=["GET"]),
        Route("/admin/config", admin_api.put_config, methods=["PUT"]),
        Route("/admin/route/explain", admin_api.explain_route, methods=["POST"]),
        Route("/admin/models", admin_api.list_models, methods=["GET"]),
        Route("/admin/models/{name}/load", admin_api.load_model, methods=["POST"]),
        Route("/admin/models/{name}/unload", admin_api.unload_model, methods=["POST"]),
        Route("/admin/events", admin_api.events, methods=["GET"]),
        Route("/admin/requests", admin_api.requests_log, methods=["GET"]),
    ]
    routes += [
        Route("/v1/responses", serving.endpoint(RESPONSES), methods=["POST"]),
        Route("/v1/responses/{response_id}", retrieve_response, methods=["GET"]),
        Route("/v1/responses/{response_id}", delete_response, methods=["DELETE"]),
        Route("/v1/messages", serving.endpoint(MESSAGES), methods=["POST"]),
        Route("/v1/messages/count_tokens", serving.count_endpoint(MESSAGES), methods=["POST"]),
    ]
    routes += telemetry_api.routes()
    routes += route_admin.routes()
    routes += semantic_admin.routes()
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={ApiError: _api_error, HTTPException: _http_error,
                                        Exception: _unexpected})
    app.state.engine = engine
    app.add_middleware(ApiKeyMiddleware, engine=engine)
    origins = engine.config.server.cors_origins
    if origins:  # outside the key check: a browser's preflight carries no key
        app.add_middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["*"],
                           allow_headers=["*"], expose_headers=["X-Laya-Route", "X-Laya-Model"])
    return app
