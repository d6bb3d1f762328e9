"""The one place that talks to huggingface_hub's client and turns its failures into hub.errors.

huggingface_hub reads HF_ENDPOINT, HF_TOKEN (or the token `hf auth login` saved), HF_HUB_OFFLINE
and the usual proxy variables itself; this module adds nothing of its own to them.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import httpx2
from huggingface_hub import HfApi, constants, get_token
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from laya_desktop.hub.errors import GatedRepo, HubError, HubUnreachable, RepoNotFound

TIMEOUT_S = 15.0


def endpoint() -> str:
    """HF_ENDPOINT as it is now (huggingface_hub reads it once, when it is imported)."""
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def api() -> HfApi:
    return HfApi(endpoint=endpoint())


def has_token() -> bool:
    return bool(get_token())


@contextlib.contextmanager
def hub_errors(repo_id: str = "", what: str = "repository") -> Iterator[None]:
    """Raise the hub's failures inside the block as HubError subclasses with a user's message."""
    try:
        yield
    except HubError:
        raise
    except GatedRepoError:
        raise GatedRepo(repo_id, has_token()) from None
    except (RevisionNotFoundError, EntryNotFoundError):
        raise RepoNotFound(repo_id, "file or revision in") from None
    except RepositoryNotFoundError:
        raise RepoNotFound(repo_id, what) from None
    except OfflineModeIsEnabled:
        raise HubUnreachable(endpoint(), "HF_HUB_OFFLINE is set") from None
    except httpx2.TransportError as exc:
        raise HubUnreachable(endpoint(), type(exc).__name__) from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status is not None and status >= 500:
            raise HubUnreachable(endpoint(), f"it answered {status}") from None
        raise HubError(f"the hub refused the request ({status}): {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0]
