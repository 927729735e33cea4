#!/usr/bin/env bash
# `orrery_compute_tool fit-roofline --write`, the command docs/compute.md gives for the A100_80GB
# preset, reproduces the preset byte for byte (the fitted block and the convolution line it derives
# from the GEMM fit), and refuses a preset without a fitted block.
set -uo pipefail
tool=$1
source_dir=$2
shared_data=$3
source "$(dirname "$0")/expect.sh"

kernels=$shared_data/compute/vidur/compute/a100/Llama-2-7b-hf_mlp.csv
if [[ ! -f $kernels ]]; then
  echo "SKIP: $kernels is absent (../shared/data is needed for the fit)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$source_dir/configs/hardware/A100_80GB.yaml" "$work/A100_80GB.yaml"
expect fit_writes 0 "rewrote the fitted block" -- "$tool" fit-roofline --preset "$work/A100_80GB.yaml" --vidur "$kernels" --write
if diff -u "$source_dir/configs/hardware/A100_80GB.yaml" "$work/A100_80GB.yaml"; then
  echo "ok   fit_reproduces_preset"
else
  fail "fit_reproduces_preset: the rewritten preset differs (above)"
fi
grep -v "FITTED" "$work/A100_80GB.yaml" > "$work/unfitted.yaml"
expect fit_needs_block 2 "no '# BEGIN FITTED' ... '# END FITTED' block" \
  -- "$tool" fit-roofline --preset "$work/unfitted.yaml" --vidur "$kernels" --write
exit $((failures > 0))
