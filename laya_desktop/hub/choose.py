"""Which of a repository's choices a user's REPO[:FILE] names (no network: the CLI parses with it
before huggingface_hub is imported)."""
from __future__ import annotations

from laya_desktop.hub.errors import NoSuchChoice
from laya_desktop.hub.types import QuantChoice, RepoFiles


def split_repo(text: str) -> tuple[str, str | None]:
    repo, sep, file = text.partition(":")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise ValueError(f"expected REPO as owner/name, got {repo!r}")
    return repo, (file or None) if sep else None


def pick(files: RepoFiles, wanted: str | None) -> QuantChoice | None:
    """The choice `wanted` names (a quantization or a file of it); the only one when None."""
    if wanted is None:
        return files.choices[0] if len(files.choices) == 1 else None
    found = files.choice(wanted)
    if found:
        return found
    for c in files.choices:
        if any(f.path == wanted or f.path.rsplit("/", 1)[-1] == wanted for f in c.files):
            return c
    raise NoSuchChoice(files.repo_id, wanted, [c.quant for c in files.choices])
