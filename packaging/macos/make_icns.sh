#!/bin/sh
# make_icns.sh ICON_DIR OUT.icns — the macOS icon from resources/icons/laya-<size>.png (iconutil is
# part of macOS).
set -eu
src=$1
out=$2
set_dir=$(dirname "$out")/Laya.iconset
rm -rf "$set_dir"
mkdir -p "$set_dir"
for size in 16 32 128 256 512; do
  cp "$src/laya-$size.png" "$set_dir/icon_${size}x${size}.png"
  cp "$src/laya-$((size * 2)).png" "$set_dir/icon_${size}x${size}@2x.png"
done
iconutil -c icns "$set_dir" -o "$out"
rm -rf "$set_dir"
