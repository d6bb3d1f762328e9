"""Searching the hub for repositories Laya can serve: GGUF ones, and MLX ones (mlx-community)."""
from __future__ import annotations

from laya_desktop.hub.client import api, hub_errors
from laya_desktop.hub.types import RepoHit

MLX_AUTHOR = "mlx-community"
_EXPAND = ["downloads", "likes", "gated", "lastModified", "tags", "cardData"]


def search_repos(query: str, *, mlx: bool = False, limit: int = 30) -> list[RepoHit]:
    """Repositories matching `query`, most downloaded first: GGUF ones, or with `mlx` the
    MLX builds of mlx-community. Raises HubUnreachable when the hub cannot be reached."""
    query = query.strip()
    if not query:
        raise ValueError("say what to search for, e.g. 'qwen coder'")
    if not 1 <= limit <= 100:
        raise ValueError(f"limit must be from 1 to 100, got {limit}")
    kwargs = {"author": MLX_AUTHOR, "filter": "mlx"} if mlx else {"filter": "gguf"}
    with hub_errors(what="search"):
        infos = list(api().list_models(search=query, sort="downloads", limit=limit,
                                       expand=_EXPAND, **kwargs))
    return [RepoHit(repo_id=m.id, downloads=int(m.downloads or 0), likes=int(m.likes or 0),
                    gated=bool(m.gated), license=license_of(m),
                    updated=m.last_modified.isoformat() if m.last_modified else None)
            for m in infos]


def license_of(info) -> str | None:
    """The model card's licence (its `license_name` for 'other'), else the hub's license: tag."""
    card = getattr(info, "card_data", None)
    if card is not None:
        name = getattr(card, "license", None)
        if name == "other" and getattr(card, "license_name", None):
            return str(card.license_name)
        if name:
            return str(name)
    for tag in getattr(info, "tags", None) or []:
        if tag.startswith("license:"):
            return tag.removeprefix("license:")
    return None
