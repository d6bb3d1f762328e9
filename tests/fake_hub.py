"""A local HTTP server that answers the Hugging Face hub's API the way huggingface_hub calls it,
for tests without the internet: point HF_ENDPOINT at `hub.url`.

    hub = FakeHub().start()
    hub.add_repo("acme/tiny-GGUF", {"tiny-Q8_0.gguf": data}, gated=False)
    hub.cut_at("acme/tiny-GGUF", "tiny-Q8_0.gguf", offset, mode="close")  # next GET breaks off
    ...
    hub.stop()

What it speaks (the shapes are the hub's):
- GET /api/models?search=&author=&filter=&limit=: model list (id, downloads, likes, gated,
  lastModified, tags, cardData).
- GET /api/models/{repo}[/revision/{rev}][?blobs=true]: model info with siblings (size, lfs).
- GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=: the file tree (oid, size, lfs).
- HEAD/GET /{repo}/resolve/{rev}/{path}: X-Repo-Commit, ETag (the sha256 for LFS files),
  X-Linked-Size, Content-Length, Accept-Ranges; GET honours `Range: bytes=N-` / `N-M` (206).
  A gated repository answers 401 with X-Error-Code: GatedRepo unless the request carries
  `Authorization: Bearer <the repo's token>`; an unknown one 404 with X-Error-Code: RepoNotFound.
Nothing speaks Xet: no X-Xet-* headers, so the client uses plain HTTP.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

CHUNK = 64 * 1024
LFS_SUFFIXES = (".gguf", ".safetensors", ".bin")


@dataclass
class _Repo:
    repo_id: str
    files: dict[str, bytes]
    gated: bool = False
    token: str | None = None  # the token that has accepted the gate
    license: str | None = "apache-2.0"
    tags: list[str] = field(default_factory=list)
    downloads: int = 0
    likes: int = 0
    wrong_sha: set[str] = field(default_factory=set)

    @property
    def commit(self) -> str:
        h = hashlib.sha1(self.repo_id.encode())
        for path in sorted(self.files):
            h.update(path.encode() + hashlib.sha256(self.files[path]).digest())
        return h.hexdigest()

    def sha256(self, path: str) -> str:
        data = self.files[path]
        if path in self.wrong_sha:
            data = data + b"not the same file"
        return hashlib.sha256(data).hexdigest()

    def is_lfs(self, path: str) -> bool:
        return path.endswith(LFS_SUFFIXES)

    def git_oid(self, path: str) -> str:
        data = self.files[path]
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class _Cut:
    offset: int
    mode: str  # "close": break the connection once; "stall": stop sending until released


class FakeHub:
    def __init__(self):
        self._repos: dict[str, _Repo] = {}
        self._cuts: dict[tuple[str, str], _Cut] = {}
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.bytes_sent: dict[str, int] = {}  # file path -> bytes sent, all transfers together

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> "FakeHub":
        hub = self

        class Handler(_Handler):
            owner = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-hub",
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the hub first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeHub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- content ------------------------------------------------------------------------------
    def add_repo(self, repo_id: str, files: dict[str, bytes], *, gated: bool = False,
                 token: str | None = None, license: str | None = "apache-2.0",
                 tags: list[str] | None = None, downloads: int = 0, likes: int = 0) -> None:
        """A model repository. GGUF repositories get the `gguf` tag, ones with safetensors and a
        config.json the `mlx` tag, unless `tags` says otherwise."""
        if tags is None:
            tags = []
            if any(p.endswith(".gguf") for p in files):
                tags.append("gguf")
            if any(p.endswith(".safetensors") for p in files) and "config.json" in files:
                tags.append("mlx")
        if license:
            tags.append(f"license:{license}")
        with self._lock:
            self._repos[repo_id] = _Repo(repo_id, dict(files), gated, token, license, tags,
                                         downloads, likes)

    def publish_wrong_sha256(self, repo_id: str, path: str) -> None:
        """List and announce a sha256 that is not the file's."""
        with self._lock:
            self._repos[repo_id].wrong_sha.add(path)

    def cut_at(self, repo_id: str, path: str, offset: int, mode: str = "close") -> None:
        """The next GET of this file stops at `offset` bytes from the file's start: "close" breaks
        the connection there (once); "stall" holds it open sending nothing until release()."""
        if mode not in ("close", "stall"):
            raise ValueError(mode)
        with self._lock:
            self._cuts[(repo_id, path)] = _Cut(offset, mode)

    def release(self) -> None:
        self._released.set()

    def ranges_asked(self, path: str) -> list[str | None]:
        return [r for m, p, r in self.requests if m == "GET" and p.endswith("/" + path)]

    # -- for the handler ----------------------------------------------------------------------
    def _repo(self, repo_id: str) -> _Repo | None:
        with self._lock:
            return self._repos.get(repo_id)

    def _take_cut(self, repo_id: str, path: str) -> _Cut | None:
        with self._lock:
            return self._cuts.pop((repo_id, path), None)

    def _count(self, path: str, n: int) -> None:
        with self._lock:
            self.bytes_sent[path] = self.bytes_sent.get(path, 0) + n

    def _search(self, query: dict) -> list[dict]:
        text = (query.get("search") or [""])[0].lower()
        author = (query.get("author") or [None])[0]
        filters = query.get("filter") or []
        limit = int((query.get("limit") or ["1000"])[0])
        with self._lock:
            repos = list(self._repos.values())
        hits = [r for r in repos
                if all(word in r.repo_id.lower() for word in text.split())
                and (author is None or r.repo_id.split("/")[0] == author)
                and all(f in r.tags for f in filters)]
        hits.sort(key=lambda r: -r.downloads)
        return [self._summary(r) for r in hits[:limit]]

    def _summary(self, r: _Repo) -> dict:
        return {"id": r.repo_id, "_id": r.commit[:24], "modelId": r.repo_id,
                "author": r.repo_id.split("/")[0], "downloads": r.downloads, "likes": r.likes,
                "gated": "manual" if r.gated else False, "private": False,
                "lastModified": "2026-11-20T10:00:00.000Z", "tags": r.tags,
                "cardData": {"license": r.license} if r.license else {}}

    def _info(self, r: _Repo, blobs: bool) -> dict:
        siblings = []
        for path, data in sorted(r.files.items()):
            s: dict = {"rfilename": path}
            if blobs:
                s["size"] = len(data)
                s["blobId"] = r.git_oid(path)
                if r.is_lfs(path):
                    s["lfs"] = {"size": len(data), "sha256": r.sha256(path), "pointerSize": 134}
            siblings.append(s)
        return {**self._summary(r), "sha": r.commit, "siblings": siblings}

    def _tree(self, r: _Repo, prefix: str) -> list[dict]:
        out = []
        for path, data in sorted(r.files.items()):
            if prefix and not path.startswith(prefix.rstrip("/") + "/"):
                continue
            entry: dict = {"type": "file", "oid": r.git_oid(path), "size": len(data), "path": path}
            if r.is_lfs(path):
                entry["lfs"] = {"oid": r.sha256(path), "size": len(data), "pointerSize": 134}
            out.append(entry)
        return out


class _Handler(BaseHTTPRequestHandler):
    owner: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # quiet under pytest
        pass

    def do_HEAD(self):
        self._route(head=True)

    def do_GET(self):
        self._route(head=False)

    def _route(self, head: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        query = parse_qs(url.query)
        self.owner.requests.append((self.command, path, self.headers.get("Range")))
        if path == "/api/models":
            return self._json(self.owner._search(query))
        if path.startswith("/api/models/"):
            return self._api_model(path.removeprefix("/api/models/"), query)
        parts = path.lstrip("/").split("/", 4)
        if len(parts) == 5 and parts[2] == "resolve":
            return self._resolve(f"{parts[0]}/{parts[1]}", parts[3], parts[4], head)
        return self._error(404, "EntryNotFound", f"no route {path}")

    def _api_model(self, rest: str, query: dict) -> None:
        owner, _, rest = rest.partition("/")
        name, _, rest = rest.partition("/")
        repo = self.owner._repo(f"{owner}/{name}")
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found")
        if rest == "" or rest.startswith("revision/"):
            return self._json(self.owner._info(repo, blobs="blobs" in query))
        if rest.startswith("tree/"):
            _, _, sub = rest.removeprefix("tree/").partition("/")
            return self._json(self.owner._tree(repo, sub))
        return self._error(404, "EntryNotFound", f"no such API {rest}")

    def _resolve(self, repo_id: str, revision: str, file: str, head: bool) -> None:
        repo = self.owner._repo(repo_id)
        if repo is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        if repo.gated and self.headers.get("Authorization") != f"Bearer {repo.token}":
            return self._error(401, "GatedRepo", f"Access to model {repo_id} is restricted. "
                               "You must have access to it and be authenticated to access it.")
        if revision not in ("main", repo.commit):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        data = repo.files.get(file)
        if data is None:
            return self._error(404, "EntryNotFound", f"{file} does not exist")
        start, end = 0, len(data) - 1
        ranged = self.headers.get("Range")
        if ranged and ranged.startswith("bytes="):
            first, _, last = ranged.removeprefix("bytes=").partition("-")
            start = int(first) if first else 0
            end = min(int(last), end) if last else end
            if start > end:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.send_response(206 if ranged else 200)
        etag = repo.sha256(file) if repo.is_lfs(file) else repo.git_oid(file)
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{etag}"')
        if repo.is_lfs(file):
            self.send_header("X-Linked-Etag", f'"{etag}"')
            self.send_header("X-Linked-Size", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.end_headers()
        if head:
            return
        cut = self.owner._take_cut(repo_id, file)
        pos = start
        while pos <= end:
            stop = min(pos + CHUNK, end + 1)
            if cut is not None and pos < cut.offset <= stop:
                stop = cut.offset
            self.wfile.write(data[pos:stop])
            self.owner._count(file, stop - pos)
            pos = stop
            if cut is not None and pos >= cut.offset:
                self.wfile.flush()
                if cut.mode == "stall":
                    while not self.owner._released.wait(0.05):
                        pass
                self.close_connection = True
                self.connection.close()
                return
        self.wfile.flush()

    def _json(self, value) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def wait_until(predicate, timeout: float = 10.0, every: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


# `make test` sets HF_HUB_OFFLINE (and TRANSFORMERS_OFFLINE) so that nothing reaches the real hub;
# a test of the fake one turns the client back on, in its own process and in the ones it starts.
ONLINE_ENV = {"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}


def go_online(monkeypatch) -> None:
    for name, value in ONLINE_ENV.items():
        monkeypatch.setenv(name, value)
    import huggingface_hub.constants as hf_constants   # read once, when it was imported
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
