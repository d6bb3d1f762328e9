"""`make appimage` checks the AppImage runtime's headers before anything else and names the
Debian packages that are missing, instead of failing at the compiler after the bundle's minutes."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "packaging" / "runtime"
PACKAGES = ("libsquashfuse-dev", "libfuse3-dev", "libzstd-dev", "zlib1g-dev", "liblzma-dev",
            "liblz4-dev", "liblzo2-dev")
HEADERS = ("squashfuse/squashfuse.h", "squashfuse/ll.h", "fuse3/fuse_lowlevel.h", "zstd.h",
           "zlib.h", "lzma.h", "lz4.h", "lzo/lzo1x.h")
pytestmark = pytest.mark.skipif(not (shutil.which("cc") and shutil.which("make")),
                                reason="needs cc and make")


def check(cppflags: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(RUNTIME / "check_deps.sh")], capture_output=True, text=True,
                          env={**os.environ, "CC": "cc", "CPPFLAGS": cppflags}, timeout=30)


def test_no_headers_at_all_names_every_package():
    done = check("-nostdinc")                 # an empty include path: nothing is installed
    assert done.returncode == 1
    assert "sudo apt-get install " + " ".join(PACKAGES) in done.stderr
    assert "squashfuse/squashfuse.h" in done.stderr


def test_only_the_missing_packages_are_named(tmp_path):
    for header in HEADERS:
        if not header.startswith(("squashfuse/", "lz4")):
            (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / header).write_text("")
    done = check(f"-nostdinc -I{tmp_path}")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "  sudo apt-get install libsquashfuse-dev liblz4-dev"


def test_all_headers_there_passes_silently(tmp_path):
    for header in HEADERS:
        (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / header).write_text("")
    done = check(f"-nostdinc -I{tmp_path}")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_make_appimage_stops_at_the_check_before_the_bundle():
    """The real target: with no headers it ends in a moment with the apt-get line, before
    PyInstaller (which would take minutes) or the compiler runs."""
    done = subprocess.run(["make", "-C", str(ROOT), "appimage", "CPPFLAGS=-nostdinc"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "sudo apt-get install libsquashfuse-dev" in done.stderr
    assert "PyInstaller" not in done.stdout + done.stderr and "main.c" not in done.stdout
