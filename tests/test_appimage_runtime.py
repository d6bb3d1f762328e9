"""The home-built AppImage runtime (packaging/runtime) on a tiny squashfs: the type-2 magic, the
offset, extraction, extract-and-run with the official runtime's environment, and the FUSE mount."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_DEPS = ("/usr/include/squashfuse/ll.h", "/usr/include/fuse3/fuse_lowlevel.h")
pytestmark = pytest.mark.skipif(
    not (shutil.which("cc") and shutil.which("mksquashfs") and all(map(os.path.exists, BUILD_DEPS))),
    reason="needs cc, squashfs-tools, libsquashfuse-dev and libfuse3-dev")

APPRUN = """#!/bin/sh
printf 'APPIMAGE=%s\\nAPPDIR=%s\\nARGV0=%s\\nOWD=%s\\n' "$APPIMAGE" "$APPDIR" "$ARGV0" "$OWD"
for a in "$@"; do printf 'ARG=%s\\n' "$a"; done
cat "$APPDIR/data-link"
exit 7
"""


@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runtime")
    subprocess.run(["make", "-s", "-C", str(ROOT / "packaging" / "runtime"), f"OUT={out}"],
                   check=True, timeout=180)
    return out / "runtime"


@pytest.fixture(scope="module")
def appimage(runtime: Path, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("app")
    appdir = folder / "AppDir"
    (appdir / "usr" / "share").mkdir(parents=True)
    (appdir / "usr" / "share" / "data.txt").write_text("hello from the squashfs\n")
    (appdir / "data-link").symlink_to("usr/share/data.txt")
    (appdir / "AppRun").write_text(APPRUN)
    (appdir / "AppRun").chmod(0o755)
    image = folder / "tiny.squashfs"
    subprocess.run(["mksquashfs", str(appdir), str(image), "-comp", "zstd", "-noappend",
                    "-all-root", "-quiet", "-no-progress"], check=True, timeout=60)
    app = folder / "Tiny-x86_64.AppImage"
    app.write_bytes(runtime.read_bytes() + image.read_bytes())
    app.chmod(0o755)
    return app


def run(app: Path, *args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(app), *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def fields(stdout: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out.setdefault(key, []).append(value)
    return out


def test_magic_and_offset(runtime, appimage, tmp_path):
    assert appimage.read_bytes()[8:11] == b"AI\x02"
    r = run(appimage, "--appimage-offset", cwd=tmp_path)
    assert r.returncode == 0
    assert int(r.stdout) == runtime.stat().st_size


def test_extract_keeps_modes_and_links(appimage, tmp_path):
    r = run(appimage, "--appimage-extract", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    root = tmp_path / "squashfs-root"
    assert os.access(root / "AppRun", os.X_OK)
    assert (root / "usr" / "share" / "data.txt").read_text() == "hello from the squashfs\n"
    assert os.readlink(root / "data-link") == "usr/share/data.txt"


def test_extract_a_pattern(appimage, tmp_path):
    r = run(appimage, "--appimage-extract", "usr/share/*", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    root = tmp_path / "squashfs-root"
    assert (root / "usr" / "share" / "data.txt").exists()
    assert not (root / "AppRun").exists()


def test_extract_and_run_sets_the_environment_and_cleans_up(appimage, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    r = run(appimage, "--appimage-extract-and-run", "one", "two words", cwd=tmp_path,
            env={"TMPDIR": str(tmpdir)})
    assert r.returncode == 7, r.stderr
    f = fields(r.stdout)
    assert f["APPIMAGE"] == [str(appimage)]
    assert f["ARGV0"] == [str(appimage)]
    assert f["OWD"] == [str(tmp_path)]
    assert f["APPDIR"][0].startswith(str(tmpdir / "appimage_extracted_"))
    assert f["ARG"] == ["one", "two words"]
    assert "hello from the squashfs" in r.stdout
    assert list(tmpdir.iterdir()) == []


def test_mount_runs_the_app_or_falls_back(appimage, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    r = run(appimage, "x", "--appimage-unknown-is-not-passed-on", cwd=tmp_path,
            env={"TMPDIR": str(tmpdir)})
    assert r.returncode == 7, r.stderr
    f = fields(r.stdout)
    assert f["ARG"] == ["x"]
    assert "hello from the squashfs" in r.stdout
    if os.path.exists("/dev/fuse") and "extracting" not in r.stderr:
        assert Path(f["APPDIR"][0]).name.startswith(".mount_Tiny-")
    deadline = time.monotonic() + 10  # the FUSE server unmounts once the app is gone
    while list(tmpdir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmpdir.iterdir()) == []


def test_extract_and_run_passes_sigterm_on_and_still_cleans_up(runtime, tmp_path):
    appdir = tmp_path / "AppDir"
    appdir.mkdir()
    (appdir / "AppRun").write_text("#!/bin/sh\ntrap 'echo got-term; exit 5' TERM\necho ready\n"
                                   "while :; do sleep 0.05; done\n")
    (appdir / "AppRun").chmod(0o755)
    image = tmp_path / "sleepy.squashfs"
    subprocess.run(["mksquashfs", str(appdir), str(image), "-noappend", "-all-root", "-quiet",
                    "-no-progress"], check=True, timeout=60)
    app = tmp_path / "Sleepy.AppImage"
    app.write_bytes(runtime.read_bytes() + image.read_bytes())
    app.chmod(0o755)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen([str(app), "--appimage-extract-and-run"], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": str(tmpdir)})
    assert proc.stdout.readline() == "ready\n"
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 5
    assert "got-term" in out
    assert list(tmpdir.iterdir()) == []


def test_without_fuse_it_falls_back_to_extract_and_run(appimage, tmp_path):
    """/dev/fuse replaced by /dev/null in a private mount namespace: the mount fails, the app runs."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not os.path.exists("/dev/fuse"):
        pytest.skip("needs root, unshare and /dev/fuse to take FUSE away")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("mount namespaces are not allowed here")
    r = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind /dev/null /dev/fuse && exec "$0" x',
                        str(appimage)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 7, r.stderr
    assert "extracting to a temporary folder instead" in r.stderr
    assert "/appimage_extracted_" in fields(r.stdout)["APPDIR"][0]
    assert fields(r.stdout)["ARG"] == ["x"]
