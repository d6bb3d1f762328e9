"""A config's revision: the ETag of `GET /admin/config`, which `PUT` takes back as `If-Match`.

Made from the content, not counted: the same config has the same revision after a restart, and a
hand edit that changes nothing leaves it as it was.
"""
from __future__ import annotations

import hashlib
import json

from laya_desktop.config.schema import Config
from laya_desktop.config.store import config_to_dict


def config_etag(config: Config) -> str:
    canonical = json.dumps(config_to_dict(config), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return '"' + hashlib.sha256(canonical.encode()).hexdigest()[:24] + '"'


def if_match_holds(header: str, etag: str) -> bool:
    """RFC 9110 If-Match: `*`, or any of a comma-separated list of entity tags (weak ones
    compared by their opaque part, as a client that got a weakened tag through a proxy sends)."""
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False
