#!/usr/bin/env bash
# `orrery_compute_tool fit-roofline --write`, the command docs/compute.md gives for the A100_80GB
# preset, reproduces the preset byte for byte (the fitted block and the convolution line it derives
# from the GEMM fit), and refuses a preset without a fitted block; the same for the H200 and H100
# presets from validation/gpu's kernels, and `export-table` reproduces configs/tables/H200_kernels.csv
# and configs/tables/H100_kernels.csv.
set -uo pipefail
tool=$1
source_dir=$2
shared_data=$3
source "$(dirname "$0")/expect.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The H200 preset and table come from the repository's own GPU measurements (validation/gpu): the
# fit rewrites the preset byte for byte, the export writes the table byte for byte.
gpu=$source_dir/validation/gpu/data/kernels
cp "$source_dir/configs/hardware/H200.yaml" "$work/H200.yaml"
expect h200_fit_writes 0 "memory-bound rows that fit in the 50 MB on-chip cache left out" \
  -- "$tool" fit-roofline --preset "$work/H200.yaml" --write \
  --kernels "$gpu/matmul.csv" "$gpu/elementwise.csv" "$gpu/reduction.csv" "$gpu/conv.csv" "$gpu/../repeat/kernels/conv.csv"
if diff -u "$source_dir/configs/hardware/H200.yaml" "$work/H200.yaml"; then
  echo "ok   h200_fit_reproduces_preset"
else
  fail "h200_fit_reproduces_preset: the rewritten preset differs (above)"
fi
expect h200_export 0 "wrote 2834 rows" -- "$tool" export-table --hardware H200 --out "$work/H200_kernels.csv" \
  "$gpu/matmul.csv" "$gpu/elementwise.csv" "$gpu/reduction.csv" "$gpu/conv.csv" "$gpu/../repeat/kernels/conv.csv"
if cmp -s "$source_dir/configs/tables/H200_kernels.csv" "$work/H200_kernels.csv"; then
  echo "ok   h200_export_reproduces_table"
else
  fail "h200_export_reproduces_table: configs/tables/H200_kernels.csv differs from the export"
fi
# The H100's (validation/gpu/data/h100, measured on a lent H100 80GB HBM3).
h100=$source_dir/validation/gpu/data/h100/kernels
cp "$source_dir/configs/hardware/H100.yaml" "$work/H100.yaml"
expect h100_fit_writes 0 "2578 measured kernel times" \
  -- "$tool" fit-roofline --preset "$work/H100.yaml" --write \
  --kernels "$h100/matmul.csv" "$h100/elementwise.csv" "$h100/reduction.csv" "$h100/conv.csv"
if diff -u "$source_dir/configs/hardware/H100.yaml" "$work/H100.yaml"; then
  echo "ok   h100_fit_reproduces_preset"
else
  fail "h100_fit_reproduces_preset: the rewritten preset differs (above)"
fi
expect h100_export 0 "wrote 2834 rows" -- "$tool" export-table --hardware H100 --out "$work/H100_kernels.csv" \
  "$h100/matmul.csv" "$h100/elementwise.csv" "$h100/reduction.csv" "$h100/conv.csv"
if cmp -s "$source_dir/configs/tables/H100_kernels.csv" "$work/H100_kernels.csv"; then
  echo "ok   h100_export_reproduces_table"
else
  fail "h100_export_reproduces_table: configs/tables/H100_kernels.csv differs from the export"
fi
expect export_needs_hardware 2 "names no device" -- "$tool" export-table --out "$work/x.csv" "$gpu/matmul.csv"
expect fit_needs_kernels 2 "no kernel times" -- "$tool" fit-roofline --preset "$work/H200.yaml"

kernels=$shared_data/compute/vidur/compute/a100/Llama-2-7b-hf_mlp.csv
if [[ ! -f $kernels ]]; then
  echo "SKIP: $kernels is absent (../shared/data is needed for the A100 fit)"
  exit $((failures > 0))
fi
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
