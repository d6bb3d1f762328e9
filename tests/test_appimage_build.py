"""packaging/build_appimage.py and bundle_filter.py without PyInstaller: a stand-in bundle becomes an
AppDir with the desktop entry, icons and metainfo, and an AppImage that runs it."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

def _load_bundle_filter():
    spec = importlib.util.spec_from_file_location("bundle_filter", ROOT / "packaging" / "bundle_filter.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dropped = _load_bundle_filter().dropped

BUILD_DEPS = ("/usr/include/squashfuse/ll.h", "/usr/include/fuse3/fuse_lowlevel.h")
needs_tools = pytest.mark.skipif(
    not (shutil.which("cc") and shutil.which("mksquashfs") and all(map(os.path.exists, BUILD_DEPS))),
    reason="needs cc, squashfs-tools, libsquashfuse-dev and libfuse3-dev")


@needs_tools
def test_a_stand_in_bundle_becomes_a_runnable_appimage(tmp_path):
    runtime_dir = tmp_path / "runtime"
    subprocess.run(["make", "-s", "-C", str(ROOT / "packaging" / "runtime"), f"OUT={runtime_dir}"],
                   check=True, timeout=180)
    bundle = tmp_path / "bundle"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "laya").write_text('#!/bin/sh\necho "laya $* from $APPDIR"\n')
    (bundle / "laya").chmod(0o755)
    appdir, dist = tmp_path / "Laya.AppDir", tmp_path / "dist"
    env = {**os.environ, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}  # no appimagetool: our runtime
    subprocess.run([sys.executable, str(ROOT / "packaging" / "build_appimage.py"), "--bundle", str(bundle),
                    "--runtime", str(runtime_dir / "runtime"), "--appdir", str(appdir),
                    "--dist", str(dist), "--level", "3"], check=True, timeout=120, env=env)

    assert os.readlink(appdir / "AppRun") == "usr/bin/laya"
    assert (appdir / "org.laya.Desktop.desktop").is_file()
    assert (appdir / ".DirIcon").resolve() == (appdir / "org.laya.Desktop.png").resolve()
    assert (appdir / "usr/share/metainfo/org.laya.Desktop.appdata.xml").is_file()
    assert (appdir / "usr/share/icons/hicolor/scalable/apps/org.laya.Desktop.svg").is_file()
    assert (appdir / "usr/share/icons/hicolor/256x256/apps/org.laya.Desktop.png").is_file()

    [image] = dist.glob("Laya-*-x86_64.AppImage")
    r = subprocess.run([str(image), "--appimage-extract-and-run", "--self-test"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("laya --self-test from ")


def test_the_filter_keeps_what_the_app_loads_and_drops_the_rest():
    for kept in ("PySide6/Qt/plugins/platforms/libqxcb.so", "PySide6/Qt/plugins/platforms/libqwayland.so",
                 "PySide6/Qt/plugins/platforms/libqoffscreen.so",
                 "PySide6/Qt/plugins/platforminputcontexts/libibusplatforminputcontextplugin.so",
                 "PySide6/Qt/translations/qtbase_zh_CN.qm", "libxcb-cursor.so.0", "libssl.so.3",
                 "PySide6/Qt/plugins/tls/libqopensslbackend.so",
                 "libgssapi_krb5.so.2", "libglib-2.0.so.0", "numpy.libs/libscipy_openblas64_.so"):
        assert not dropped(kept), kept
    for gone in ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", "PySide6/Qt/translations/qtbase_de.qm",
                 "PySide6/Qt/plugins/sqldrivers/libqsqlite.so", "libX11.so.6", "libfontconfig.so.1",
                 "libcairo.so.2", "libz.so.1", "PySide6/QtCore.pyi"):
        assert dropped(gone), gone
