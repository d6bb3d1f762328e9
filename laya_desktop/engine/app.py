"""The engine's ASGI app: routes, OpenAI-shaped errors, the API key check, start and stop."""
from __future__ import annotations

import contextlib
import hmac
import logging

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from laya_desktop.engine import admin_api, serving, telemetry_api
from laya_desktop.engine.apis.chat import CHAT, COMPLETIONS
from laya_desktop.engine.apis.embeddings import EMBEDDINGS
from laya_desktop.engine.core import Engine
from laya_desktop.engine.errors import ApiError

log = logging.getLogger("laya.engine")

OPEN_PATHS = {"/healthz"}


class ApiKeyMiddleware:
    """With server.api_key set, everything but /healthz needs `Authorization: Bearer <key>` (or
    `x-api-key: <key>`)."""

    def __init__(self, app: ASGIApp, engine: Engine):
        self.app = app
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self.engine.config.server.api_key
        if scope["type"] != "http" or not key or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        auth = headers.get(b"authorization", b"").decode("latin-1")
        # Anthropic's clients (Claude Code, the anthropic SDK) send the key as x-api-key.
        given = auth[7:] if auth.lower().startswith("bearer ") else \
            headers.get(b"x-api-key", b"").decode("latin-1")
        if hmac.compare_digest(given.encode(), key.encode()):
            await self.app(scope, receive, send)
            return
        error = ApiError(401, "missing or wrong API key: send 'Authorization: Bearer <key>' or "
                         "'x-api-key: <key>'", "invalid_request_error", "invalid_api_key")
        if scope["path"].startswith("/v1/messages"):
            from laya_desktop.engine.apis.messages import MESSAGES
            response = MESSAGES.error_response(error, {"WWW-Authenticate": "Bearer"})
        else:
            response = error.response({"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


async def _api_error(request: Request, exc: ApiError):
    return exc.response()


async def _http_error(request: Request, exc: HTTPException):
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    return ApiError(exc.status_code, str(exc.detail), "invalid_request_error", code).response()


async def _unexpected(request: Request, exc: Exception):
    log.exception("unhandled error on %s", request.url.path)
    return JSONResponse({"error": {"message": f"internal error: {exc}", "type": "server_error",
                                   "code": "internal_error", "param": None}}, status_code=500)


def _agent_api_routes() -> list[Route]:
    """The Responses and Messages adapters, once their modules are there."""
    routes = []
    try:
        from laya_desktop.engine.apis.responses import RESPONSES, delete_response, retrieve_response
        routes.append(Route("/v1/responses", serving.endpoint(RESPONSES), methods=["POST"]))
        routes.append(Route("/v1/responses/{response_id}", retrieve_response, methods=["GET"]))
        routes.append(Route("/v1/responses/{response_id}", delete_response, methods=["DELETE"]))
    except ImportError:
        pass
    try:
        from laya_desktop.engine.apis.messages import MESSAGES
        routes.append(Route("/v1/messages", serving.endpoint(MESSAGES), methods=["POST"]))
        routes.append(Route("/v1/messages/count_tokens", serving.count_endpoint(MESSAGES),
                            methods=["POST"]))
    except ImportError:
        pass
    return routes


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
    routes += _agent_api_routes()
    routes += telemetry_api.routes()
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={ApiError: _api_error, HTTPException: _http_error,
                                        Exception: _unexpected})
    app.state.engine = engine
    app.add_middleware(ApiKeyMiddleware, engine=engine)
    return app
