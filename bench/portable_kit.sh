#!/usr/bin/env bash
# Packs build/release/orrery with the shared libraries and the Open MPI runtime it needs (Debian 12's
# Open MPI 4.1 and PMIx, their plugins that load without the high-speed network libraries, help
# texts) into one relocatable folder, for a machine with many cores but no Open MPI (the workplace's
# lent GPU machine): bench/parallel_scaling.sh runs from it there. The Debian 12 C library and
# loader come along for hosts with an older one (the scaling script uses them only then).
# Usage: [ORRERY_BIN=path] bench/portable_kit.sh [OUT]   (defaults: build/release/orrery, build/devkit)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/devkit}
multiarch=/usr/lib/x86_64-linux-gnu
bin=${ORRERY_BIN:-$root/build/release/orrery}
rm -rf "$out"
mkdir -p "$out"/{bin,lib,glibc,usr/bin,usr/share} "$out/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$out/pmix/lib/pmix"
cp "$bin" "$out/bin/orrery"
cp /usr/bin/orterun /usr/bin/orted "$out/usr/bin/"
ln -s orterun "$out/usr/bin/mpirun"
cp -r /usr/share/openmpi "$out/usr/share/"
[[ -d /usr/share/pmix ]] && cp -r /usr/share/pmix "$out/usr/share/"
glibc='/(libc|libm|libpthread|libdl|librt)\.so|ld-linux'
libs_of() { ldd "$@" 2>/dev/null | awk '/=>/ {print $3}' | grep -vE "$glibc" | grep -v '^not' | sort -u; }
core=$(libs_of "$bin" /usr/bin/orterun /usr/bin/orted $multiarch/pmix2/lib/libpmix.so*)
core=$(printf '%s\n' "$core" $multiarch/pmix2/lib/libpmix.so.2 | sort -u)
for lib in $core; do cp -L "$lib" "$out/lib/"; done
# Plugins whose libraries are all in the kit (the others -- UCX, libfabric, verbs, PSM -- would not load).
copied=0
for plugin in $multiarch/openmpi/lib/openmpi3/*.so $multiarch/pmix2/lib/pmix/*.so; do
  missing=0
  for dep in $(libs_of "$plugin" | grep -v -e /openmpi/lib/ -e /pmix2/); do
    [[ -e $out/lib/$(basename "$dep") ]] || missing=1
  done
  if [[ $missing -eq 0 ]]; then
    case $plugin in
      */pmix2/*) cp "$plugin" "$out/pmix/lib/pmix/" ;;
      *) cp "$plugin" "$out/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/" ;;
    esac
    copied=$((copied + 1))
  fi
done
for lib in /lib/x86_64-linux-gnu/{libc.so.6,libm.so.6} /lib64/ld-linux-x86-64.so.2; do cp -L "$lib" "$out/glibc/"; done
echo "kit: $out ($(du -sh "$out" | cut -f1), $(ls "$out/lib" | wc -l) libraries, $copied plugins)"
