"""Who may call: clients that reach the engine by a name of this machine, and of web pages only the
user's own. The outermost layer of the app, ahead of CORS and the key check.

- Host (421): a page on a rebinding domain (its name first resolves to the attacker, then to
  127.0.0.1) is same-origin with the engine, so the browser lets it read every answer; only the
  Host header still carries the attacker's name. Any IP literal is fine (nothing rebinds a
  literal; it also covers the bound LAN address and 0.0.0.0), so are localhost and *.localhost
  (RFC 6761; browsers resolve them to loopback themselves) and server.allowed_hosts. The port is
  not compared: a rebinding page uses the engine's port anyway, and SSH tunnels and container port
  maps change it. A request without Host (HTTP/1.0) comes from no browser and passes.
- Origin (403): browsers send simple requests (text/plain or form bodies) across sites without a
  preflight and mark them with Origin. Only loopback pages and server.cors_origins pass; `null`
  (sandboxed frames, file: pages) never does. A preflight (OPTIONS) goes on to CORS, which answers
  it for the listed origins only.
- Content-Type (415): a JSON endpoint takes application/json (or +json), or no Content-Type
  header at all: a browser sends a body without one only with an Origin (refused above), while
  scripts (curl -X POST, httpx content=) often send none. An empty header is refused.
"""
from __future__ import annotations

import hmac
import ipaddress
import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from laya_desktop.engine.errors import ApiError

log = logging.getLogger("laya.engine")

BODY_METHODS = (b"POST", b"PUT", b"PATCH")
TOKEN_HEADER = b"x-laya-app-token"
STATE_KEY = "laya_app_token_ok"   # in the request's scope state: the caller showed the app token
_LOGGED_MAX = 64   # distinct refusals logged, so a page retrying in a loop cannot fill the log


def host_name(header: str) -> str | None:
    """The name in a Host header ('[::1]:8555' -> '::1'); None when it is no host[:port]."""
    header = header.strip().lower()
    if header.startswith("["):
        name, closed, rest = header[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    elif header.count(":") == 1:
        name, _, port = header.partition(":")
    else:
        name, port = header, ""
    if not name or (port and not port.isdigit()):
        return None
    return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])  # an IPv6 zone ('fe80::1%eth0') is no name
        return True
    except ValueError:
        return False


def _is_localhost(name: str) -> bool:
    return name == "localhost" or name.endswith(".localhost")


def host_allowed(name: str, allowed: list[str]) -> bool:
    if _is_ip(name) or _is_localhost(name):
        return True
    for entry in allowed:
        entry = entry.lower()
        if entry == "*" or name == entry or (entry.startswith(".") and
                                               (name.endswith(entry) or name == entry[1:])):
            return True
    return False


def _loopback_origin(origin: str) -> bool:
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https"):
        return False
    name = host_name(rest)
    if name is None:
        return False
    if _is_localhost(name):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def origin_allowed(origin: str, cors_origins: list[str]) -> bool:
    origin = origin.strip().lower().rstrip("/")
    if origin == "null":
        return False
    if _loopback_origin(origin):
        return True
    return any(o == "*" or o.lower().rstrip("/") == origin for o in cors_origins)


def json_type(content_type: str) -> bool:
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (mime.startswith("application/") and mime.endswith("+json"))


def _shown(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:77] + "...")


class WebGuard:
    """Refuses what no client of the user's own sends; marks the callers that show the app token."""

    def __init__(self, app: ASGIApp, engine, app_token: str, respond):
        self.app = app
        self.engine = engine
        self._respond = respond   # (path, ApiError, headers) -> the answer in path's API's shape
        self._token = app_token.encode()
        self._logged: set[tuple[str, str]] = set()

    def _refusal(self, method: bytes, host: bytes | None, origin: bytes | None,
                 content_type: bytes | None) -> ApiError | None:
        server = self.engine.config.server
        if host is not None:
            text = host.decode("latin-1")
            name = host_name(text)
            if name is None or not host_allowed(name, server.allowed_hosts):
                return self._note("host", text, ApiError(
                    421, f"this engine does not answer to the host {_shown(text)}: reach it by "
                    "IP address or localhost, or add the name to server.allowed_hosts",
                    "invalid_request_error", "misdirected_request"))
        if origin is not None and method != b"OPTIONS":
            text = origin.decode("latin-1")
            if not origin_allowed(text, server.cors_origins):
                return self._note("origin", text, ApiError(
                    403, f"requests from web pages at {_shown(text)} are refused: only pages on "
                    "loopback and the origins in server.cors_origins may call this engine",
                    "permission_error", "origin_not_allowed"))
        if content_type is not None and method in BODY_METHODS:
            text = content_type.decode("latin-1")
            if not json_type(text):
                return ApiError(415, f"the body must be JSON, sent with 'Content-Type: "
                                f"application/json' (got {_shown(text)})",
                                "invalid_request_error", "unsupported_media_type")
        return None

    def _note(self, kind: str, value: str, error: ApiError) -> ApiError:
        if len(self._logged) < _LOGGED_MAX and (kind, value) not in self._logged:
            self._logged.add((kind, value))
            log.warning("refused a request with %s %s (%d)", kind, _shown(value), error.status)
        return error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = content_type = token = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"content-type":
                content_type = value
            elif name == TOKEN_HEADER:
                token = value
        method = scope["method"].encode()
        error = self._refusal(method, host, origin, content_type)
        if error is not None:
            # the body stays unread, so the connection cannot carry another request: say so, or a
            # keep-alive client sends its next one into a closed socket
            headers = {"Connection": "close"} if method in BODY_METHODS else None
            await self._respond(scope["path"], error, headers)(scope, receive, send)
            return
        # compare_digest: its time does not tell how much of a guess was right
        scope.setdefault("state", {})[STATE_KEY] = token is not None and \
            hmac.compare_digest(token.strip(), self._token)
        await self.app(scope, receive, send)
