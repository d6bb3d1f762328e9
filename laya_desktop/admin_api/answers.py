"""Typed answers of the admin API."""
from __future__ import annotations

from dataclasses import dataclass, field

from laya_desktop.telemetry.events import EventKind


@dataclass(frozen=True)
class Page:
    """One read of a numbered log (telemetry, events, requests): `seq` is the highest number the
    engine has issued, `items` those newer than the `since` asked for, oldest first."""
    seq: int
    items: list[dict] = field(default_factory=list)

    @property
    def newest(self) -> int:
        """The highest seq among the items (0 without any)."""
        return max((int(i.get("seq") or 0) for i in self.items), default=0)


@dataclass(frozen=True)
class ConfigRevision:
    """The applied config and its revision (the ETag that a PUT names as If-Match)."""
    config: dict
    etag: str | None


@dataclass(frozen=True)
class ConfigApplied:
    """The answer to PUT /admin/config: what the engine applied (None from an engine that does
    not echo it) and its new revision."""
    status: str
    config: dict | None
    etag: str | None


def page_of(body: object, key: str) -> Page:
    body = body if isinstance(body, dict) else {}
    items = [i for i in body.get(key) or [] if isinstance(i, dict)]
    seq = body.get("seq")
    return Page(seq if isinstance(seq, int) else 0, items)


def events_of(body: object) -> Page:
    """Events whose kind is one we know carry it as an EventKind (equal to its string); a kind
    from a newer engine stays a plain string."""
    page = page_of(body, "events")
    for event in page.items:
        try:
            event["kind"] = EventKind(event.get("kind"))
        except ValueError:
            pass
    return page
