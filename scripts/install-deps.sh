#!/usr/bin/env bash
# Installs Orrery's build and analysis dependencies from Debian 12 packages.
# Idempotent: only packages that are not yet installed are passed to apt-get.
# Works as root; uses sudo otherwise. Set ORRERY_SKIP_DEPS=1 to skip entirely.
set -euo pipefail

if [[ "${ORRERY_SKIP_DEPS:-0}" == "1" ]]; then
  exit 0
fi

packages=(
  # toolchain
  g++ cmake ninja-build make pkg-config git
  # parallel runtime
  libopenmpi-dev openmpi-bin
  # libraries
  libboost-dev libprotobuf-dev protobuf-compiler libhdf5-openmpi-dev
  libfmt-dev libspdlog-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libpcg-cpp-dev zlib1g-dev libabsl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # analysis tools (tools/, make validate)
  python3 python3-h5py python3-numpy python3-pandas python3-matplotlib
)
# Extra groups requested by a make target (e.g. `fuzz` needs clang's libFuzzer runtime).
case "${1:-}" in
  fuzz|asan) packages+=(clang libclang-rt-14-dev) ;;
  "") ;;
  *) echo "install-deps.sh: unknown group '$1' (known: fuzz, asan)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  sudo_cmd=()
else
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
