"""What can go wrong talking to the hub or downloading from it, each with a message for the user."""
from __future__ import annotations


class HubError(Exception):
    """Base of the hub package's errors; str(error) is the user-facing message."""

    code = "hub_error"


class HubUnreachable(HubError):
    code = "hub_unreachable"

    def __init__(self, endpoint: str, detail: str = ""):
        self.endpoint = endpoint
        tail = f" ({detail})" if detail else ""
        super().__init__(f"the model hub cannot be reached at {endpoint}{tail}; check the network "
                         "or HF_ENDPOINT, or use a model file already on this machine")


class GatedRepo(HubError):
    code = "gated_repo"

    def __init__(self, repo_id: str, has_token: bool):
        self.repo_id = repo_id
        if has_token:
            how = (f"your token has no access yet: accept the conditions at "
                   f"https://huggingface.co/{repo_id} with the account that owns the token")
        else:
            how = (f"accept its conditions at https://huggingface.co/{repo_id}, then set HF_TOKEN "
                   "or run `hf auth login`")
        super().__init__(f"{repo_id} is a gated repository: {how}")


class RepoNotFound(HubError):
    code = "repo_not_found"

    def __init__(self, repo_id: str, what: str = "repository"):
        self.repo_id = repo_id
        super().__init__(f"no {what} {repo_id!r} on the hub (or it is private and needs HF_TOKEN)")


class NoSuchChoice(HubError):
    code = "no_such_file"

    def __init__(self, repo_id: str, wanted: str, valid: list[str]):
        listed = ", ".join(valid) if valid else "none"
        super().__init__(f"{repo_id} has no {wanted!r} (valid: {listed})")


class NotEnoughDisk(HubError):
    code = "not_enough_disk"

    def __init__(self, folder: str, needed_bytes: int, free_bytes: int):
        self.folder, self.needed_bytes, self.free_bytes = folder, needed_bytes, free_bytes
        super().__init__(f"not enough disk space in {folder}: the download needs "
                         f"{_gib(needed_bytes)}, {_gib(free_bytes)} is free")


class ChecksumMismatch(HubError):
    code = "checksum_mismatch"

    def __init__(self, path: str, expected: str, actual: str):
        self.path, self.expected, self.actual = path, expected, actual
        super().__init__(f"{path}: sha256 {actual[:12]}… does not match the hub's {expected[:12]}…; "
                         "the file was removed, download it again")


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"
