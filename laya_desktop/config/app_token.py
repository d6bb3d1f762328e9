"""The app token: a random secret per engine launch that proves a caller is one of the user's own
processes (the desktop app, the `laya` commands), never a web page.

The engine takes it from LAYA_APP_TOKEN (the desktop app makes one per launch) or makes its own,
and writes it to `engine-<port>.token` in the user's runtime folder, readable by the user alone
(0600 in a 0700 folder). A client of an engine on this machine reads it there and sends it as
`X-Laya-App-Token`. A browser page can read no file, so it can never send it.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

from laya_desktop.app_files import runtime_dir

ENV = "LAYA_APP_TOKEN"
HEADER = "X-Laya-App-Token"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_path(port: int, folder: Path | None = None) -> Path:
    return (folder or runtime_dir()) / f"engine-{port}.token"


def write_token(port: int, token: str, folder: Path | None = None) -> Path:
    """Atomically, created 0600 (never a moment readable by others), in a 0700 folder."""
    path = token_path(port, folder)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, token.encode())
    finally:
        os.close(fd)
    os.replace(temp, path)
    return path


def read_token(port: int, folder: Path | None = None) -> str | None:
    """The token of the engine on this port, or None (no engine wrote one, or not for us)."""
    path = token_path(port, folder)
    try:
        st = path.stat()
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None  # somebody else's file: not our engine's word
        return path.read_text("ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def remove_token(port: int, token: str, folder: Path | None = None) -> None:
    """Remove the file if it still holds our token (a later engine on the port may own it now)."""
    if read_token(port, folder) == token:
        try:
            token_path(port, folder).unlink()
        except OSError:
            pass


def is_local_host(host: str) -> bool:
    """Whether a client may send the token to `host`: loopback, or an address of this machine
    (an engine listening on the LAN address); never a name that could be another machine."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if address.is_loopback:
        return True
    import psutil   # only for a LAN address
    return any(a.address.split("%", 1)[0].lower() == name
               for addresses in psutil.net_if_addrs().values() for a in addresses)
