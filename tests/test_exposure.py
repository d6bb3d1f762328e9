"""Exposure: loopback by default, keys on every endpoint but /healthz (an admin key of
its own), CORS closed unless origins are listed, and keys never echoed in errors or logs."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psutil
import pytest

from engine_harness import running_engine
from laya_desktop.config.schema import ServerConfig
from laya_desktop.config.validate import validate_config

API_KEY, ADMIN_KEY, REMOTE_KEY = "k-main-7f3a", "k-admin-91c2", "sk-upstream-secret-5d1e"
USER = [{"role": "user", "content": "hi"}]
# (method, path, body): every route the engine has
MODEL_ENDPOINTS = [
    ("POST", "/v1/chat/completions", {"model": "tiny", "messages": USER, "max_tokens": 1}),
    ("POST", "/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 1}),
    ("POST", "/v1/responses", {"model": "tiny", "input": "hi", "max_output_tokens": 1, "store": False}),
    ("GET", "/v1/responses/resp_nope", None),
    ("DELETE", "/v1/responses/resp_nope", None),
    ("POST", "/v1/messages", {"model": "tiny", "messages": USER, "max_tokens": 1}),
    ("POST", "/v1/messages/count_tokens", {"model": "tiny", "messages": USER}),
    ("POST", "/v1/embeddings", {"model": "tiny", "input": "hi"}),
    ("GET", "/v1/models", None),
    ("GET", "/v1/models/tiny", None),
]
ADMIN_ENDPOINTS = [
    ("GET", "/admin/config", None),
    ("POST", "/admin/route/explain", {"messages": USER}),
    ("GET", "/admin/models", None),
    ("POST", "/admin/models/tiny/load", None),
    ("POST", "/admin/models/nope/unload", None),
    ("GET", "/admin/events", None),
    ("GET", "/admin/requests", None),
    ("GET", "/admin/telemetry", None),
    ("GET", "/metrics", None),
]


def _config(gguf, **server) -> dict:
    return {"server": server,
            "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 128,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


def _call(c: httpx.Client, method: str, path: str, body, headers: dict) -> httpx.Response:
    return c.request(method, path, headers=headers, content=json.dumps(body) if body else None)


def _assert_401_in_shape(path: str, r: httpx.Response) -> None:
    assert r.status_code == 401, (path, r.status_code, r.text[:200])
    body = r.json()
    if path.startswith("/v1/messages"):
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error", body
    else:
        assert body["error"]["code"] == "invalid_api_key", body


# --- loopback and the refusal -------------------------------------------------------------------

def test_loopback_is_the_default():
    assert ServerConfig().host == "127.0.0.1"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org"])
def test_non_loopback_host_needs_an_api_key(host):
    raw = {"server": {"host": host}, "models": [{"name": "r", "backend": "openai",
                                                 "base_url": "https://x/v1"}],
           "routes": [{"name": "d", "target": "r"}]}
    config, errors = validate_config(raw)
    assert config is None and [e.path for e in errors] == ["server.api_key"]
    raw["server"]["api_key"] = "k"
    assert validate_config(raw)[1] == []


def test_serve_refuses_a_public_host_without_a_key(tmp_path, tiny_gguf):
    import yaml
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(_config(tiny_gguf)))
    done = subprocess.run([sys.executable, "-m", "laya_desktop", "serve", "--config", str(path),
                           "--host", "0.0.0.0", "--port", "1"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0 and "api_key" in done.stderr


def test_engine_listens_on_loopback_only(tmp_path, tiny_gguf):
    with running_engine(_config(tiny_gguf), tmp_path) as eng:
        listening = [c.laddr for c in psutil.Process(eng.proc.pid).net_connections("inet")
                     if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening


# --- keys ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def keyed(tmp_path_factory, tiny_gguf):
    folder = tmp_path_factory.mktemp("keyed")
    with running_engine(_config(tiny_gguf, api_key=API_KEY, admin_api_key=ADMIN_KEY), folder) as eng:
        yield eng


def test_every_endpoint_but_healthz_needs_a_key(keyed):
    with keyed.client(timeout=60) as c:
        assert c.get("/healthz").status_code == 200
        for method, path, body in MODEL_ENDPOINTS + ADMIN_ENDPOINTS:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"},
                            {"Authorization": f"Basic {API_KEY}"},
                            {"Authorization": f"Bearer {API_KEY}x"}):
                _assert_401_in_shape(path, _call(c, method, path, body, headers))


def test_api_key_opens_the_model_apis_and_not_the_admin_api(keyed):
    with keyed.client(timeout=60) as c:
        for method, path, body in MODEL_ENDPOINTS:
            for headers in ({"Authorization": f"Bearer {API_KEY}"}, {"x-api-key": API_KEY}):
                assert _call(c, method, path, body, headers).status_code != 401, (method, path)
        for method, path, body in ADMIN_ENDPOINTS:
            _assert_401_in_shape(path, _call(c, method, path, body,
                                             {"Authorization": f"Bearer {API_KEY}"}))


def test_admin_key_opens_everything(keyed):
    with keyed.client(timeout=60) as c:
        for method, path, body in MODEL_ENDPOINTS + ADMIN_ENDPOINTS:
            r = _call(c, method, path, body, {"Authorization": f"Bearer {ADMIN_KEY}"})
            assert r.status_code != 401, (method, path)


def test_keys_stay_out_of_the_request_log_and_the_engine_log(keyed):
    with keyed.client(timeout=60) as c:
        _call(c, "POST", "/v1/chat/completions", MODEL_ENDPOINTS[0][2],
              {"Authorization": f"Bearer {API_KEY}"})
        logged = c.get("/admin/requests", headers={"x-api-key": ADMIN_KEY}).json()["requests"]
    assert logged
    text = json.dumps(logged)
    assert API_KEY not in text and ADMIN_KEY not in text
    assert not {k for entry in logged for k in entry} & {"headers", "authorization", "api_key"}
    log = keyed.log_path.read_text(errors="replace")
    assert API_KEY not in log and ADMIN_KEY not in log


def test_keys_are_compared_in_constant_time(monkeypatch):
    from laya_desktop.engine import app as app_module
    calls = []
    real = app_module.hmac.compare_digest
    monkeypatch.setattr(app_module.hmac, "compare_digest",
                        lambda a, b: calls.append((a, b)) or real(a, b))

    class Engine:
        class config:
            server = ServerConfig(api_key=API_KEY, admin_api_key=ADMIN_KEY)

    mw = app_module.ApiKeyMiddleware(None, Engine())
    assert mw._allowed("/v1/models", API_KEY.encode())
    assert not mw._allowed("/admin/config", API_KEY.encode())
    # both keys are compared, whichever matches, so timing does not tell which was near
    assert len(calls) == 3 and all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in calls)


def test_api_key_alone_guards_the_admin_api_too(tmp_path, tiny_gguf):
    with running_engine(_config(tiny_gguf, api_key=API_KEY), tmp_path) as eng, \
            eng.client(timeout=60) as c:
        _assert_401_in_shape("/admin/config", c.get("/admin/config"))
        _assert_401_in_shape("/metrics", c.get("/metrics"))
        assert c.get("/admin/config", headers={"x-api-key": API_KEY}).status_code == 200


# --- CORS ---------------------------------------------------------------------------------------

PREFLIGHT = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"}


def test_cors_is_closed_by_default(keyed):
    with keyed.client() as c:
        r = c.options("/v1/chat/completions", headers=PREFLIGHT)
        plain = c.get("/healthz", headers={"Origin": "http://app.example"})
    assert r.status_code >= 400
    assert "access-control-allow-origin" not in r.headers
    assert "access-control-allow-origin" not in plain.headers


def test_cors_opens_for_listed_origins_only(tmp_path, tiny_gguf):
    config = _config(tiny_gguf, api_key=API_KEY, cors_origins=["http://app.example"])
    with running_engine(config, tmp_path) as eng, eng.client(timeout=60) as c:
        allowed = c.options("/v1/chat/completions", headers=PREFLIGHT)  # a preflight has no key
        other = c.options("/v1/chat/completions", headers={**PREFLIGHT, "Origin": "http://evil.example"})
        keyed = c.get("/v1/models", headers={"Origin": "http://app.example",
                                             "Authorization": f"Bearer {API_KEY}"})
        unkeyed = c.get("/v1/models", headers={"Origin": "http://app.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://app.example"
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    assert keyed.status_code == 200 and keyed.headers["access-control-allow-origin"] == "http://app.example"
    assert unkeyed.status_code == 401  # CORS lets the browser read the answer, not skip the key


def test_cors_origins_are_validated():
    raw = {"server": {"cors_origins": ["app.example"]},
           "models": [{"name": "r", "backend": "openai", "base_url": "https://x/v1"}],
           "routes": [{"name": "d", "target": "r"}]}
    assert [e.path for e in validate_config(raw)[1]] == ["server.cors_origins"]
    raw["server"]["cors_origins"] = "*"
    assert [e.path for e in validate_config(raw)[1]] == ["server.cors_origins"]
    raw["server"]["cors_origins"] = ["*", "https://a.example:8080"]
    assert validate_config(raw)[1] == []


# --- remote keys --------------------------------------------------------------------------------

class _EchoingUpstream(BaseHTTPRequestHandler):
    """An upstream that refuses with a 401 quoting the key it was sent (as some APIs do)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        key = (self.headers.get("authorization") or "")[7:]
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}.",
                                     "type": "invalid_request_error"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_remote_key_is_not_echoed_in_errors(tmp_path, tiny_gguf):
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    config = _config(tiny_gguf)
    config["models"].append({"name": "cloud", "backend": "openai", "api_key_env": "LAYA_CLOUD_KEY",
                             "base_url": f"http://127.0.0.1:{upstream.server_port}/v1"})
    try:
        with running_engine(config, tmp_path, env={"LAYA_CLOUD_KEY": REMOTE_KEY}) as eng, \
                eng.client(timeout=60) as c:
            r = c.post("/v1/chat/completions", json={"model": "cloud", "messages": USER})
            streamed = c.post("/v1/chat/completions",
                              json={"model": "cloud", "messages": USER, "stream": True})
            logged = c.get("/admin/requests").text
            log = eng.log_path.read_text(errors="replace")
    finally:
        upstream.shutdown()
    assert r.status_code == 401 and "Incorrect API key provided" in r.text  # the reason is kept
    for text in (r.text, streamed.text, logged, log):
        assert REMOTE_KEY not in text
    assert "[redacted]" in r.text


# --- the GUI --------------------------------------------------------------------------------------

def test_gui_never_logs_a_key():
    gui = Path(__file__).parent.parent / "laya_desktop" / "gui"
    logging_call = re.compile(r"\b(log|logger|logging)\.\w+\(|\bprint\(|\.append_log\(|\.showMessage\(")
    offenders = []
    for path in gui.rglob("*.py"):
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if logging_call.search(line) and re.search(r"api_key|_key\b|[Aa]uthorization|Bearer", line):
                offenders.append(f"{path.name}:{n}: {line.strip()}")
    assert not offenders, offenders


def test_clients_of_their_own_engine_send_the_admin_key(tmp_path):
    """The GUI and `laya ps` read the key from models.yaml: the admin key when there is one,
    since it opens the admin API and the model APIs alike."""
    import yaml

    from laya_desktop.config.address import server_address
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"server": {"api_key": API_KEY, "admin_api_key": ADMIN_KEY}}))
    assert server_address(path)[2] == ADMIN_KEY
    path.write_text(yaml.safe_dump({"server": {"api_key": API_KEY}}))
    assert server_address(path)[2] == API_KEY
