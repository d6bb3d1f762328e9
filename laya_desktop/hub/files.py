"""A repository's downloadable choices: its GGUF files grouped by quantization (the parts of a
multi-part GGUF together), or its MLX build as one folder."""
from __future__ import annotations

import re
from collections import defaultdict

from laya_desktop.hub.client import api, hub_errors
from laya_desktop.hub.search import license_of
from laya_desktop.hub.types import HubFile, QuantChoice, RepoFiles

# llama.cpp's type names as file names carry them: Q4_K_M, IQ3_XXS, Q8_0, BF16, TQ1_0, MXFP4...
_QUANT = re.compile(r"(?<![A-Za-z0-9])(UD-)?(I?Q\d(?:_[A-Z0-9]+)*|TQ\d_\d|BF16|F16|FP16|F32|MXFP4)"
                    r"(?![A-Za-z0-9])", re.IGNORECASE)
SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
_MLX_BITS = re.compile(r"(?<![A-Za-z0-9])(\d+bit|bf16|fp16|mxfp4|dwq)(?![A-Za-z0-9])", re.IGNORECASE)
# what an MLX build needs; READMEs, pictures and the git attributes stay on the hub
_MLX_FILES = re.compile(r"\.(safetensors|json|jinja|txt|model|tiktoken|py)$", re.IGNORECASE)


def quant_of(path: str) -> str:
    """The quantization a GGUF's name gives (upper case), or its name when it gives none."""
    name = path.rsplit("/", 1)[-1]
    found = list(_QUANT.finditer(SPLIT.sub(".gguf", path)))
    if not found:
        return SPLIT.sub("", name).removesuffix(".gguf")
    m = found[-1]
    return ((m.group(1) or "") + m.group(2)).upper()


def is_model_gguf(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    # vision projectors and imatrix data are companions, not models of their own
    return name.endswith(".gguf") and not name.startswith(("mmproj", "imatrix"))


def choices_of(files: list[HubFile], repo_id: str = "", revision: str = "") -> list[QuantChoice]:
    ggufs = [f for f in files if is_model_gguf(f.path)]
    if ggufs:
        groups: dict[tuple[str, str], list[HubFile]] = defaultdict(list)
        for f in ggufs:
            base = SPLIT.sub("", f.path) if SPLIT.search(f.path) else f.path
            groups[(quant_of(f.path), base)].append(f)
        out = []
        for (quant, _), parts in groups.items():
            parts.sort(key=lambda f: f.path)
            out.append(QuantChoice(quant=quant, kind="gguf", files=tuple(parts),
                                   total_bytes=sum(f.size for f in parts),
                                   repo_id=repo_id, revision=revision))
        _name_duplicates(out)
        return sorted(out, key=lambda c: c.total_bytes)
    if any(f.path.endswith(".safetensors") for f in files) and any(
            f.path == "config.json" for f in files):
        needed = tuple(sorted((f for f in files if _MLX_FILES.search(f.path)), key=lambda f: f.path))
        m = _MLX_BITS.search(repo_id.rsplit("/", 1)[-1])
        return [QuantChoice(quant=m.group(1).lower() if m else "mlx", kind="mlx", files=needed,
                            total_bytes=sum(f.size for f in needed), repo_id=repo_id,
                            revision=revision)]
    return []


def _name_duplicates(choices: list[QuantChoice]) -> None:
    """Two files of one quantization (a model and its '-it' twin, say) get their names as quant."""
    seen: dict[str, int] = defaultdict(int)
    for c in choices:
        seen[c.quant] += 1
    for i, c in enumerate(choices):
        if seen[c.quant] > 1:
            name = SPLIT.sub(".gguf", c.files[0].path).removesuffix(".gguf")
            object.__setattr__(choices[i], "quant", name)


def repo_choices(repo_id: str, *, revision: str = "main") -> RepoFiles:
    """What `repo_id` offers at `revision`, read at one commit (RepoFiles.revision), with its
    licence and whether it is gated. HubUnreachable, RepoNotFound on failure."""
    with hub_errors(repo_id):
        info = api().model_info(repo_id, revision=revision, files_metadata=True)
    commit = info.sha or revision
    files = [HubFile(path=s.rfilename, size=int((s.lfs.size if s.lfs else s.size) or 0),
                     sha256=s.lfs.sha256 if s.lfs else None)
             for s in info.siblings or []]
    return RepoFiles(repo_id=info.id, revision=commit, license=license_of(info),
                     gated=bool(info.gated), choices=choices_of(files, info.id, commit))
