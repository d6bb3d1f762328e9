"""The values the hub package hands to its callers (the CLI, the engine's pull endpoint, the GUI)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

FileKind = Literal["gguf", "mlx"]
Verdict = Literal["fits", "tight", "does_not_fit"]
Device = Literal["ram", "vram"]
PullState = Literal["queued", "downloading", "verifying", "done", "failed", "cancelled"]
FINISHED_STATES = ("done", "failed", "cancelled")


@dataclass(frozen=True)
class RepoHit:
    repo_id: str
    downloads: int
    likes: int
    gated: bool
    license: str | None
    updated: str | None  # ISO 8601, as the hub gives it

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HubFile:
    path: str
    size: int
    sha256: str | None  # the LFS oid the hub publishes; None for a file kept outside LFS


@dataclass(frozen=True)
class QuantChoice:
    quant: str  # "Q4_K_M", "BF16", or for MLX the folder's bits ("4bit") or "mlx"
    kind: FileKind
    files: tuple[HubFile, ...]  # a multi-part GGUF lists every part, first part first
    total_bytes: int
    repo_id: str = ""  # where it comes from, so a choice alone can be judged and downloaded
    revision: str = ""  # the commit RepoFiles was read at

    @property
    def first_file(self) -> HubFile:
        return self.files[0]

    def to_dict(self) -> dict:
        return {"quant": self.quant, "kind": self.kind, "total_bytes": self.total_bytes,
                "repo_id": self.repo_id, "revision": self.revision,
                "files": [asdict(f) for f in self.files]}


@dataclass(frozen=True)
class RepoFiles:
    repo_id: str
    revision: str  # the commit the listing was read at, so a download gets the same files
    license: str | None
    gated: bool
    choices: list[QuantChoice] = field(default_factory=list)

    def choice(self, quant: str) -> QuantChoice | None:
        for c in self.choices:
            if c.quant.lower() == quant.lower():
                return c
        return None

    def to_dict(self) -> dict:
        return {"repo_id": self.repo_id, "revision": self.revision, "license": self.license,
                "gated": self.gated, "choices": [c.to_dict() for c in self.choices]}


@dataclass(frozen=True)
class Fit:
    verdict: Verdict
    needed_bytes: int
    available_bytes: int
    device: Device
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PullStatus:
    job_id: str
    repo_id: str
    quant: str
    state: PullState
    done_bytes: int
    total_bytes: int
    speed_bps: float
    eta_s: float | None
    error: str | None
    local_path: str | None  # the model's file (the first part of a multi-part GGUF) or MLX folder
    model_name: str | None = None  # set once the download is registered in models.yaml
    error_code: str | None = None  # the HubError's code (gated_repo, not_enough_disk, ...)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    def to_dict(self) -> dict:
        return asdict(self)
