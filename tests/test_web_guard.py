"""Who may call: a Host that names this machine (421 otherwise, DNS rebinding), no web
page but loopback's and server.cors_origins' (403), JSON bodies only (415), config changes to the
server or to where remotes send keys only with the admin key or the app token (403), and
api_key_env only naming provider key variables."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from engine_harness import running_engine
from laya_desktop.config import app_token
from laya_desktop.config.validate import validate_config
from laya_desktop.engine.privilege import privileged_changes
from laya_desktop.engine.web_guard import host_allowed, host_name, json_type, origin_allowed

ROOT = Path(__file__).resolve().parents[1]
ADMIN_KEY, API_KEY = "k-admin-29aa", "k-api-29bb"
USER = [{"role": "user", "content": "hi"}]
CHAT = {"model": "tiny", "messages": USER, "max_tokens": 1}
ATTACKER_REMOTE = {"name": "exfil", "backend": "openai", "base_url": "http://attacker.example/v1",
                   "api_key_env": "OPENAI_API_KEY"}


def _config(gguf, **server) -> dict:
    return {"server": server,
            "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 128,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


# --- the rules, as tables ------------------------------------------------------------------------

@pytest.mark.parametrize("header, name", [
    ("127.0.0.1:8555", "127.0.0.1"), ("LOCALHOST", "localhost"), ("[::1]:8555", "::1"),
    ("[::1]", "::1"), ("laya.lan:80", "laya.lan"), ("a:b", None), ("[::1]x", None), ("", None),
    ("::1", "::1"),
])
def test_host_names_are_read_from_the_header(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize("name, allowed, ok", [
    ("127.0.0.1", [], True), ("::1", [], True), ("192.168.1.5", [], True), ("10.0.0.7", [], True),
    ("fe80::1%eth0", [], True), ("localhost", [], True), ("app.localhost", [], True),
    ("rebind.attacker.example", [], False), ("localhost.attacker.example", [], False),
    ("127.0.0.1.nip.io", [], False), ("mybox", [], False), ("mybox", ["mybox"], True),
    ("MYBOX", ["mybox"], False),   # host_name() lowercases first; the entry is matched as given
    ("gpu.tail.ts.net", [".tail.ts.net"], True), ("tail.ts.net", [".tail.ts.net"], True),
    ("eviltail.ts.net", [".tail.ts.net"], False), ("anything.example", ["*"], True),
])
def test_hosts(name, allowed, ok):
    assert host_allowed(name, allowed) is ok


@pytest.mark.parametrize("origin, listed, ok", [
    ("http://localhost:3000", [], True), ("http://127.0.0.1:9", [], True), ("http://[::1]:1", [], True),
    ("http://app.localhost:5173", [], True), ("https://localhost", [], True),
    ("http://127.9.9.9:80", [], True), ("null", [], False), ("null", ["*"], False),
    ("http://evil.example", [], False), ("http://localhost.evil.example", [], False),
    ("http://evil.example", ["*"], True), ("https://app.example", ["https://app.example"], True),
    ("https://APP.example/", ["https://app.example"], True),
    ("http://app.example", ["https://app.example"], False),
    ("file://", [], False), ("chrome-extension://abc", [], False),
])
def test_origins(origin, listed, ok):
    assert origin_allowed(origin, listed) is ok


@pytest.mark.parametrize("content_type, ok", [
    ("application/json", True), ("application/json; charset=utf-8", True), ("", False),
    ("Application/JSON", True), ("application/vnd.api+json", True), ("text/plain", False),
    ("text/plain;charset=UTF-8", False), ("application/x-www-form-urlencoded", False),
    ("multipart/form-data; boundary=x", False), ("application/octet-stream", False),
    ("text/json", False),
])
def test_json_types(content_type, ok):
    assert json_type(content_type) is ok


def _validated(raw: dict):
    config, errors = validate_config(raw)
    assert errors == [], errors
    return config


def test_which_config_changes_need_privilege(tiny_gguf):
    base = _config(tiny_gguf)
    base["models"].append({"name": "cloud", "backend": "openai", "base_url": "https://api.x/v1",
                           "api_key_env": "OPENAI_API_KEY"})
    old = _validated(base)

    def changes(edit) -> list[str]:
        raw = json.loads(json.dumps(base))
        edit(raw)
        return privileged_changes(old, _validated(raw))

    assert changes(lambda raw: None) == []
    assert changes(lambda raw: raw["routes"].insert(0, {"name": "c", "target": "cloud",
                                                        "match": {"tags": ["x"]}})) == []
    assert changes(lambda raw: raw["models"][0].update(n_ctx=256)) == []
    assert changes(lambda raw: raw["models"].append({**raw["models"][0], "name": "t2"})) == []
    assert changes(lambda raw: raw["models"][1].update(remote_model="other")) == []
    assert changes(lambda raw: raw["models"].append(ATTACKER_REMOTE)) == [
        "models[2] (a new remote: http://attacker.example/v1, key from $OPENAI_API_KEY)"]
    assert changes(lambda raw: raw["models"][1].update(base_url="http://attacker.example/v1")) \
        == ["models[1] (a remote's endpoint: http://attacker.example/v1, key from $OPENAI_API_KEY)"]
    assert changes(lambda raw: raw["models"][1].update(api_key_env="GROQ_API_KEY"))[0] \
        .startswith("models[1] (a remote's endpoint")
    # where prompts go is the user's to decide, key or no key
    assert changes(lambda raw: raw["models"].append(
        {"name": "keyless", "backend": "openai", "base_url": "http://attacker.example/v1"})) \
        == ["models[2] (a new remote: http://attacker.example/v1)"]
    assert changes(lambda raw: raw["server"].update(host="0.0.0.0", api_key="attacker")) \
        == ["server.host", "server.api_key"]
    for key, value in [("cors_origins", ["http://evil.example"]), ("allowed_hosts", ["evil"]),
                       ("admin_api_key", "x"), ("port", 9), ("allowed_key_envs", ["AWS_X"]),
                       ("max_body_mb", 1)]:
        assert changes(lambda raw: raw["server"].update({key: value})) == [f"server.{key}"]
    assert changes(lambda raw: raw.pop("server")) == []   # the defaults, as before


# --- api_key_env ---------------------------------------------------------------------------------

def _remote_config(env: str | None, **server) -> dict:
    model = {"name": "r", "backend": "openai", "base_url": "https://x/v1"}
    if env is not None:
        model["api_key_env"] = env
    return {"server": server, "models": [{"name": "local", "backend": "llama_cpp",
                                          "path": "builtin:gemma-3-270m"}, model],
            "routes": [{"name": "d", "target": "r"}]}


@pytest.mark.parametrize("env", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY",
                                 "GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY",
                                 "GEMINI_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY",
                                 "XAI_API_KEY", "CLOUD_API_KEY", "LAYA_WORK_KEY", None])
def test_provider_key_variables_are_allowed(env):
    assert validate_config(_remote_config(env))[1] == []


@pytest.mark.parametrize("env", ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "HOME", "SSH_AUTH_SOCK",
                                 "openai_api_key", "LAYA_APP_TOKEN"])
def test_other_variables_are_refused_with_the_path(env):
    config, errors = validate_config(_remote_config(env))
    assert config is None and [str(e) for e in errors] == [
        f"models[1].api_key_env: {env!r} is not an API key variable: name one such as "
        f"OPENAI_API_KEY (any NAME_API_KEY), a LAYA_* variable, or list {env!r} in "
        "server.allowed_key_envs"]


def test_the_user_may_list_more_key_variables():
    assert validate_config(_remote_config("WORK_GATEWAY_TOKEN",
                                          allowed_key_envs=["WORK_GATEWAY_TOKEN"]))[1] == []
    assert [str(e) for e in validate_config(_remote_config("X", allowed_key_envs=["X-Y"]))[1]][0] \
        == "server.allowed_key_envs: expected environment variable names like MY_API_KEY, got 'X-Y'"
    errors = validate_config(_remote_config("A B"))[1]
    assert [e.path for e in errors] == ["models[1].api_key_env"] and "variable name" in str(errors[0])
    # LAYA_APP_TOKEN stays refused even when listed: it is the engine's, not a remote's
    assert [e.path for e in validate_config(_remote_config(
        "LAYA_APP_TOKEN", allowed_key_envs=["LAYA_APP_TOKEN"]))[1]] == ["models[1].api_key_env"]


def test_allowed_hosts_are_validated():
    raw = _remote_config(None, allowed_hosts=["laya.lan", ".tail.ts.net", "*", "my-box", "laya_engine"])
    assert validate_config(raw)[1] == []
    for bad in ("http://laya.lan", "laya.lan:8555", "laya.lan/x", "", "a..b"):
        raw["server"]["allowed_hosts"] = [bad]
        assert [e.path for e in validate_config(raw)[1]] == ["server.allowed_hosts"], bad


@pytest.mark.parametrize("path", ["models.yaml", "laya_desktop/config/default_models.yaml",
                                  "docs/demo-models.yaml"])
def test_shipped_configs_and_their_commented_remotes_pass(path):
    """The remotes these files show in comments name allowed variables, uncommented too."""
    text = (ROOT / path).read_text("utf-8")
    names = {line.split(":", 1)[1].strip() for line in text.splitlines()
             if line.strip().lstrip("# ").startswith("api_key_env:")}
    for name in names:
        assert validate_config(_remote_config(name))[1] == [], (path, name)


# --- a real engine ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("runtime")
    folder.chmod(0o700)
    return folder


@pytest.fixture(scope="module")
def eng(tmp_path_factory, tiny_gguf, runtime):
    folder = tmp_path_factory.mktemp("guard")
    config = _config(tiny_gguf, allowed_hosts=["laya.lan"], cors_origins=["https://app.example"])
    with running_engine(config, folder, env={"XDG_RUNTIME_DIR": str(runtime)}) as engine:
        yield engine


def _token(engine, runtime) -> str:
    token = app_token.read_token(engine.port, runtime / "laya")
    assert token
    return token


def _shape(path: str, r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, (path, r.status_code, r.text[:300])
    body = r.json()
    if path.startswith("/v1/messages"):
        assert body["type"] == "error" and body["error"]["message"], body
    else:
        assert body["error"]["code"] == code and body["error"]["message"], body


ROUTES = [("POST", "/v1/chat/completions", CHAT), ("POST", "/v1/messages", CHAT),
          ("GET", "/admin/config", None), ("POST", "/admin/models/tiny/unload", None),
          ("GET", "/healthz", None), ("GET", "/v1/models", None)]


@pytest.mark.parametrize("host", ["rebind.attacker.example", "rebind.attacker.example:{port}",
                                  "localhost.attacker.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "a:b:c", "[::1"])
def test_a_foreign_host_gets_421_in_the_api_shape(eng, host):
    with eng.client() as c:
        for method, path, body in ROUTES:
            r = c.request(method, path, json=body, headers={"Host": host.format(port=eng.port)})
            _shape(path, r, 421, "misdirected_request")
            assert "tiny" not in r.text and "llama_cpp" not in r.text   # nothing of the engine


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LocalHost", "[::1]:{port}",
                                  "app.localhost:{port}", "192.168.1.5:{port}", "0.0.0.0:{port}",
                                  "laya.lan:{port}", "laya.lan", "127.0.0.1:1"])
def test_this_machine_s_names_are_served(eng, host):
    with eng.client() as c:
        r = c.get("/v1/models", headers={"Host": host.format(port=eng.port)})
    assert r.status_code == 200 and "tiny" in [m["id"] for m in r.json()["data"]]


def _raw(engine, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", engine.port), timeout=30) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_a_request_without_host_is_served(eng):
    """HTTP/1.0 has no Host; no browser sends such a request (llama-server and Ollama serve it)."""
    data = _raw(eng, b"GET /v1/models HTTP/1.0\r\n\r\n")
    assert data.split(b" ", 2)[1] == b"200" and b'"tiny"' in data


def _log_seq(c) -> int:
    return c.get("/admin/requests").json()["seq"]


def _state(c) -> str:
    return c.get("/admin/models").json()["models"][0]["state"]


def _loaded(c) -> None:
    assert c.post("/admin/models/tiny/load").status_code == 200
    assert _state(c) == "ready"


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost.evil.example",
                                    "https://app.example.evil", "http://app.example"])
def test_a_foreign_origin_gets_403_and_changes_nothing(eng, origin):
    with eng.client() as c:
        _loaded(c)
        seq = _log_seq(c)
        for content_type in ("text/plain", "application/json", None):
            headers = {"Origin": origin, **({"Content-Type": content_type} if content_type else {})}
            r = c.post("/admin/models/tiny/unload", headers=headers)
            _shape("/admin", r, 403, "origin_not_allowed")
            r = c.post("/v1/chat/completions", content=json.dumps(CHAT), headers=headers)
            _shape("/v1/chat/completions", r, 403, "origin_not_allowed")
            r = c.post("/v1/messages", content=json.dumps(CHAT), headers=headers)
            _shape("/v1/messages", r, 403, "origin_not_allowed")
            assert "access-control-allow-origin" not in r.headers
        r = c.get("/admin/config", headers={"Origin": origin})
        _shape("/admin/config", r, 403, "origin_not_allowed")
        assert _state(c) == "ready" and _log_seq(c) == seq


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000",
                                    "https://app.example"])
def test_loopback_and_listed_origins_are_served(eng, origin):
    with eng.client() as c:
        r = c.post("/v1/chat/completions", json=CHAT, headers={"Origin": origin})
        assert r.status_code == 200, r.text
        listed = origin == "https://app.example"
        assert (r.headers.get("access-control-allow-origin") == origin) is listed
        preflight = c.options("/v1/chat/completions", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        assert (preflight.status_code == 200) is listed


def test_a_foreign_preflight_is_answered_without_cors(eng):
    with eng.client() as c:
        r = c.options("/v1/chat/completions", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 400 and "access-control-allow-origin" not in r.headers


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", ""])
def test_non_json_bodies_get_415_and_are_not_served(eng, content_type):
    with eng.client() as c:
        _loaded(c)
        seq = _log_seq(c)
        before = eng.config_path.read_bytes()
        for method, path, body in [("POST", "/v1/chat/completions", CHAT), ("POST", "/v1/messages", CHAT),
                                   ("POST", "/admin/models/tiny/unload", None),
                                   ("PUT", "/admin/config", c.get("/admin/config").json())]:
            r = c.request(method, path, content=json.dumps(body) if body else b"",
                          headers={"Content-Type": content_type})
            _shape(path, r, 415, "unsupported_media_type")
            assert r.headers["connection"] == "close"   # its body was never read
        assert _state(c) == "ready" and _log_seq(c) == seq
        assert eng.config_path.read_bytes() == before


def test_json_and_untyped_bodies_are_served(eng):
    with eng.client() as c:
        for headers in ({"Content-Type": "application/json; charset=utf-8"}, {}):
            r = c.post("/v1/chat/completions", content=json.dumps(CHAT), headers=headers)
            assert r.status_code == 200, r.text


def test_dns_rebinding_cannot_read_or_change_the_config(eng, runtime):
    """The DNS-rebinding attack: GET the config, PUT it back with a remote that sends a key of the
    user's to the attacker, and listen on every address with the attacker's key."""
    rebound = {"Host": f"rebind.attacker.example:{eng.port}", "Origin":
               f"http://rebind.attacker.example:{eng.port}"}
    before = eng.config_path.read_bytes()
    with eng.client() as c:
        seq = c.get("/admin/events").json()["seq"]
        for headers in (rebound, {"Host": rebound["Host"]}):   # fetch() sends Origin on a PUT
            r = c.get("/admin/config", headers={"Host": rebound["Host"]})
            _shape("/admin/config", r, 421, "misdirected_request")
            assert "tiny" not in r.text and "models" not in r.text
            config = c.get("/admin/config").json()
            config["models"].append(ATTACKER_REMOTE)
            config["routes"].insert(0, {"name": "first", "target": "exfil"})
            config["server"].update(host="0.0.0.0", api_key="attacker-key")
            r = c.put("/admin/config", json=config, headers=headers)
            _shape("/admin/config", r, 421, "misdirected_request")
        assert c.get("/admin/config").json()["models"] == [
            m for m in config["models"] if m["name"] != "exfil"]
        kinds = [e["kind"] for e in c.get("/admin/events", params={"since": seq}).json()["events"]]
    assert "config_applied" not in kinds
    assert eng.config_path.read_bytes() == before


def test_no_get_route_changes_anything():
    """Browsers send GETs (links, images, navigations) anywhere without asking: every GET route
    only reads. A new GET route must be added here after checking that it does too."""
    from laya_desktop.config.schema import Config, ModelConfig, RouteConfig
    from laya_desktop.engine.app import create_app
    from laya_desktop.engine.core import Engine
    config = Config(models=[ModelConfig(name="r", backend="openai", base_url="https://x/v1")],
                    routes=[RouteConfig(name="d", target="r")])
    app = create_app(Engine(config))
    gets = {r.path for r in app.routes if "GET" in (getattr(r, "methods", None) or ())}
    assert gets <= {"/healthz", "/v1/models", "/v1/models/{name:path}", "/v1/responses/{response_id}",
                    "/admin/config", "/admin/models", "/admin/events", "/admin/requests",
                    "/admin/telemetry", "/metrics", "/admin/stats",
                    # download progress (engine/pull_admin.py): reads the jobs, starts nothing
                    "/admin/models/pulls",
                    # the same reads without /v1, as llama-server answers them
                    "/models", "/models/{name:path}", "/responses/{response_id}",
                    # llama-server's health check: says the engine is up, as /healthz
                    "/health",
                    # the Ollama adapter's reads (engine/apis/ollama_models.py)
                    "/api/tags", "/api/ps", "/api/version"}, gets


# --- privileged config changes ---------------------------------------------------------------------

def test_the_token_file_is_the_user_s_alone_and_goes_with_the_engine(tmp_path, tiny_gguf):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    given = "given-by-the-app-" + "x" * 20
    with running_engine(_config(tiny_gguf), tmp_path, env={"XDG_RUNTIME_DIR": str(runtime),
                                                           app_token.ENV: given}) as engine:
        path = app_token.token_path(engine.port, runtime / "laya")
        assert path.read_text() == given
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        with engine.client() as c:
            _loaded(c)
            for pid in engine.runner_pids():   # the engine keeps it to itself
                assert app_token.ENV.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
            config = c.get("/admin/config").json()
            config["server"]["cors_origins"] = ["https://app.example"]
            assert c.put("/admin/config", json=config,
                         headers={app_token.HEADER: given}).status_code == 200
    assert not path.exists()


def test_server_and_remote_changes_need_the_app_token(eng, runtime):
    token = _token(eng, runtime)
    with eng.client() as c:
        original = c.get("/admin/config").json()
        before = eng.config_path.read_bytes()
        for edit, named in [
                (lambda cfg: cfg["models"].append(ATTACKER_REMOTE), "models[1] (a new remote"),
                (lambda cfg: cfg["server"].update(host="0.0.0.0", api_key="k"), "server.host"),
                (lambda cfg: cfg["server"].update(cors_origins=["*"]), "server.cors_origins"),
                (lambda cfg: cfg["server"].update(allowed_hosts=["*"]), "server.allowed_hosts")]:
            config = json.loads(json.dumps(original))
            edit(config)
            for headers in ({}, {app_token.HEADER: token + "x"}, {app_token.HEADER: ""},
                            {"Authorization": f"Bearer {token}"}):
                r = c.put("/admin/config", json=config, headers=headers)
                _shape("/admin/config", r, 403, "privilege_required")
                assert named in r.json()["error"]["message"] and "nothing was changed" in r.text
            assert c.get("/admin/config").json() == original
            assert eng.config_path.read_bytes() == before
        # routes and local models need no privilege
        config = json.loads(json.dumps(original))
        config["routes"].insert(0, {"name": "code", "match": {"tags": ["code"]}, "target": "tiny"})
        config["models"][0]["n_ctx"] = 256
        assert c.put("/admin/config", json=config).status_code == 200
        # the app token opens the rest
        config["models"].append({**ATTACKER_REMOTE, "base_url": "http://127.0.0.1:9/v1"})
        r = c.put("/admin/config", json=config, headers={app_token.HEADER: token})
        assert r.status_code == 200, r.text
        assert "exfil" in eng.config_path.read_text()
        assert c.put("/admin/config", json=original,
                     headers={app_token.HEADER: token}).status_code == 200


def test_the_admin_key_is_privileged_and_the_api_key_is_not(tmp_path, tiny_gguf):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    with running_engine(_config(tiny_gguf, api_key=API_KEY, admin_api_key=ADMIN_KEY), tmp_path,
                        env={"XDG_RUNTIME_DIR": str(runtime)}) as engine, engine.client() as c:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        config = c.get("/admin/config", headers=admin).json()
        config["models"].append({**ATTACKER_REMOTE, "base_url": "http://127.0.0.1:9/v1"})
        assert c.put("/admin/config", json=config,
                     headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 401
        assert c.put("/admin/config", json=config, headers={"x-api-key": ADMIN_KEY}).status_code == 200
        # the app token opens the admin API without the admin key, and makes a change privileged
        token = _token(engine, runtime)
        config["server"]["cors_origins"] = ["https://app.example"]
        r = c.put("/admin/config", json=config, headers={app_token.HEADER: token})
        assert r.status_code == 200, r.text
        assert c.get("/admin/models", headers={app_token.HEADER: token + "x"}).status_code == 401


def test_laya_commands_send_the_app_token(tmp_path, tiny_gguf):
    """`laya ps` against an engine whose admin key its config does not hold: the token opens it."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    with running_engine(_config(tiny_gguf, admin_api_key=ADMIN_KEY), tmp_path, env=env) as engine:
        keyless = tmp_path / "cli.yaml"
        keyless.write_text(yaml.safe_dump({"server": {"port": engine.port}}))
        run = lambda *args, extra={}: subprocess.run(   # noqa: E731
            [sys.executable, "-m", "laya_desktop", *args, "--config", str(keyless), "--json"],
            capture_output=True, text=True, timeout=60, env={**os.environ, **env, **extra})
        done = run("ps", "--all")
        assert done.returncode == 0, done.stderr
        assert [m["name"] for m in json.loads(done.stdout)["models"]] == ["tiny"]
        other = tmp_path / "other"
        other.mkdir(mode=0o700)
        refused = run("ps", extra={"XDG_RUNTIME_DIR": str(other)})
        assert refused.returncode == 1 and json.loads(refused.stdout)["error"]["code"] == "invalid_api_key"
