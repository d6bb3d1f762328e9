"""Where a models.yaml says its engine listens, read leniently for clients of that engine.

Only the server section is read, without validating the rest: a client (the GUI, `laya ps`) must
reach a running engine even while the file holds an edit the engine refused.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from laya_desktop.config import yaml12

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8555


def server_address(path: Path | None) -> tuple[str, int, str | None]:
    """host, port and the key to send (admin_api_key, else api_key); defaults for a missing or unreadable file."""
    raw = {}
    if path is not None:
        try:
            raw = yaml12.safe_load(Path(path).read_text("utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            raw = {}
    server = raw.get("server") if isinstance(raw, dict) else None
    server = server if isinstance(server, dict) else {}
    host = str(server.get("host") or DEFAULT_HOST)
    if host in ("0.0.0.0", "::"):
        host = DEFAULT_HOST  # listening everywhere; talk to it over loopback
    try:
        port = int(server.get("port") or DEFAULT_PORT)
    except (TypeError, ValueError):
        port = DEFAULT_PORT
    # The admin key opens the admin API and the model APIs alike, so a client of its own engine
    # (the GUI, `laya ps`) uses it when one is set.
    key = server.get("admin_api_key") or server.get("api_key")
    return host, port, str(key) if key else None


def base_url(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    return f"http://{host}:{port}"
