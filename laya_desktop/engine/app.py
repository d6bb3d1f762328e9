"""The engine's ASGI app: routes, OpenAI-shaped errors, who may call (web_guard.py, the API key
check, the app token), start and stop."""
from __future__ import annotations

import contextlib
import hmac  # noqa: F401  (tests patch hmac.compare_digest through this module)
import logging
import os
import socket

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from laya_desktop.config import app_token
from laya_desktop.engine import (admin_api, prompt_cache_admin, pull_admin, route_admin,
                                 semantic_admin, serving, telemetry_api)
from laya_desktop.engine.apis.chat import CHAT, COMPLETIONS
from laya_desktop.engine.apis.embeddings import EMBEDDINGS
from laya_desktop.engine.apis.llama_native import BOTH_COMPLETIONS, NATIVE_COMPLETION
from laya_desktop.engine.apis.messages import MESSAGES
from laya_desktop.engine.apis.responses import RESPONSES, delete_response, retrieve_response
from laya_desktop.engine.core import Engine
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.privilege import given_key, key_matches, showed_app_token
from laya_desktop.engine.web_guard import WebGuard

log = logging.getLogger("laya.engine")

OPEN_PATHS = {"/healthz", "/health"}   # /health: llama-server's name for it


def _is_admin(path: str) -> bool:
    return path == "/metrics" or path.startswith("/admin/")


def error_for_path(path: str, error: ApiError, headers: dict[str, str] | None = None):
    """An error in the shape of the API that `path` belongs to (Anthropic's under /v1/messages)."""
    if path.startswith("/v1/messages"):
        from laya_desktop.engine.apis.messages import MESSAGES
        return MESSAGES.error_response(error, headers)
    if path.startswith("/api/"):   # Ollama's API: {"error": "message"}
        from laya_desktop.engine.apis.ollama import error_response
        return error_response(error, headers)
    return error.response(headers)


class ApiKeyMiddleware:
    """With server.api_key set, everything but /healthz needs `Authorization: Bearer <key>` (or
    `x-api-key: <key>`). With server.admin_api_key set, /admin/* and /metrics need that key and
    api_key no longer opens them; the admin key opens the model APIs too (one key for the GUI).
    The app token (WebGuard checked it) opens everything: only the user's own processes have it."""

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
        return any([key_matches(given, k) for k in wanted])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = self.engine.config.server
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or not (
                server.api_key or server.admin_api_key) or showed_app_token(scope):
            await self.app(scope, receive, send)
            return
        given = given_key(dict(scope["headers"]))
        if self._allowed(scope["path"], given):
            await self.app(scope, receive, send)
            return
        which = "admin API key" if _is_admin(scope["path"]) and \
            self.engine.config.server.admin_api_key else "API key"
        error = ApiError(401, f"missing or wrong {which}: send 'Authorization: Bearer <key>' or "
                         "'x-api-key: <key>'", "authentication_error", "invalid_api_key")
        response = error_for_path(scope["path"], error, {"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


async def _api_error(request: Request, exc: ApiError):
    return error_for_path(request.url.path, exc)


async def _http_error(request: Request, exc: HTTPException):
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    error = ApiError(exc.status_code, str(exc.detail), "invalid_request_error", code)
    return error_for_path(request.url.path, error, exc.headers)


async def _client_left(request: Request, exc: ClientDisconnect):
    """A client that left while an admin endpoint read its body: no one to answer, nothing to
    log (the model APIs record theirs in the request log as 499)."""
    return Response(status_code=499)


async def _unexpected(request: Request, exc: Exception):
    log.exception("unhandled error on %s", request.url.path)
    error = ApiError(500, f"internal error: {type(exc).__name__}", "server_error", "internal_error")
    # Starlette re-raises after this answer and uvicorn then drops the connection; without
    # `Connection: close` a keep-alive client sends its next request into the closed socket and
    # gets a reset instead of a status.
    return error_for_path(request.url.path, error, {"Connection": "close"})


def create_app(engine: Engine, port: int | None = None) -> Starlette:
    """`port`: where the engine will listen, to write its app token for the CLI (app_token.py)."""
    # Popped, so that no runner or other child of the engine inherits it.
    token = os.environ.pop(app_token.ENV, "").strip() or app_token.new_token()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        written = bool(port) and _publish_token(port, token)
        await engine.start()
        try:
            yield
        finally:
            await engine.stop()
            if written:
                app_token.remove_token(port, token)

    routes = [
        Route("/healthz", admin_api.healthz, methods=["GET"]),
        Route("/health", admin_api.healthz, methods=["GET"]),
        Route("/v1/chat/completions", serving.endpoint(CHAT), methods=["POST"]),
        Route("/v1/completions", serving.endpoint(COMPLETIONS), methods=["POST"]),
        Route("/v1/embeddings", serving.endpoint(EMBEDDINGS), methods=["POST"]),
        Route("/v1/models", serving.list_models, methods=["GET"]),
        Route("/v1/models/{name:path}", serving.get_model, methods=["GET"]),
        # the same routes without /v1, as llama-server, vLLM and Ollama answer them (an OpenAI
        # SDK whose base_url lacks /v1 calls these)
        Route("/chat/completions", serving.endpoint(CHAT), methods=["POST"]),
        # llama-server's own format, which its clients read there (apis/llama_native.py)
        Route("/completions", serving.endpoint(BOTH_COMPLETIONS), methods=["POST"]),
        Route("/completion", serving.endpoint(NATIVE_COMPLETION), methods=["POST"]),
        Route("/embeddings", serving.endpoint(EMBEDDINGS), methods=["POST"]),
        Route("/models", serving.list_models, methods=["GET"]),
        Route("/models/{name:path}", serving.get_model, methods=["GET"]),
        Route("/admin/config", admin_api.get_config, methods=["GET"]),
        Route("/admin/config", admin_api.put_config, methods=["PUT"]),
        Route("/admin/route/explain", admin_api.explain_route, methods=["POST"]),
        Route("/admin/models", admin_api.list_models, methods=["GET"]),
        Route("/admin/models/{name:path}/load", admin_api.load_model, methods=["POST"]),
        Route("/admin/models/{name:path}/unload", admin_api.unload_model, methods=["POST"]),
        Route("/admin/models/{name:path}/prompt-cache", prompt_cache_admin.clear_prompt_cache,
              methods=["DELETE"]),
        Route("/admin/events", admin_api.events, methods=["GET"]),
        Route("/admin/requests", admin_api.requests_log, methods=["GET"]),
    ]
    routes += [
        Route("/v1/responses", serving.endpoint(RESPONSES), methods=["POST"]),
        Route("/v1/responses/{response_id}", retrieve_response, methods=["GET"]),
        Route("/v1/responses/{response_id}", delete_response, methods=["DELETE"]),
        Route("/responses", serving.endpoint(RESPONSES), methods=["POST"]),
        Route("/responses/{response_id}", retrieve_response, methods=["GET"]),
        Route("/responses/{response_id}", delete_response, methods=["DELETE"]),
        Route("/v1/messages", serving.endpoint(MESSAGES), methods=["POST"]),
        Route("/v1/messages/count_tokens", serving.count_endpoint(MESSAGES), methods=["POST"]),
    ]
    routes += ollama_routes()
    routes += telemetry_api.routes()
    routes += route_admin.routes()
    routes += semantic_admin.routes()
    routes += pull_admin.routes()
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={ApiError: _api_error, HTTPException: _http_error,
                                        ClientDisconnect: _client_left, Exception: _unexpected})
    app.state.engine = engine
    app.add_middleware(ApiKeyMiddleware, engine=engine)
    origins = engine.config.server.cors_origins
    if origins:  # outside the key check: a browser's preflight carries no key
        app.add_middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["*"],
                           allow_headers=["*"], expose_headers=["X-Laya-Route", "X-Laya-Model"])
    app.add_middleware(WebGuard, engine=engine, app_token=token, respond=error_for_path)  # outermost
    return app


def ollama_routes() -> list[Route]:
    """Ollama's API on the same port, for the tools that speak only it (engine/apis/ollama*.py)."""
    from laya_desktop.engine.apis import ollama, ollama_models
    routes = [Route(f"/api/{api.kind}", ollama.endpoint(api), methods=["POST"])
              for api in (ollama.CHAT, ollama.GENERATE, ollama.EMBED, ollama.EMBEDDINGS)]
    routes += [Route("/api/tags", ollama_models.tags, methods=["GET"]),
               Route("/api/ps", ollama_models.ps, methods=["GET"]),
               Route("/api/show", ollama_models.show, methods=["POST"]),
               Route("/api/version", ollama_models.version, methods=["GET"])]
    routes += [Route(f"/api/{name}", ollama_models.not_here, methods=["POST", "DELETE"])
               for name in ollama_models.STORE_CALLS]
    routes.append(Route("/api/blobs/{digest:path}", ollama_models.not_here, methods=["HEAD", "POST"]))
    return routes


def _publish_token(port: int, token: str) -> bool:
    """Write the token file unless another engine already listens on the port: this one will fail
    to bind, and must not take that engine's file with it."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            log.warning("port %d is taken: the app token file stays that engine's", port)
            return False
    except OSError:
        pass
    try:
        app_token.write_token(port, token)
        return True
    except OSError as exc:   # a read-only home: the CLI then needs the admin key
        log.warning("cannot write the app token file: %s", exc)
        return False
