// Measured kernel times: Orrery's table format and importers for the measurement sets in
// ../shared/data/compute (docs/compute.md, "Kernel tables").
//
// Orrery's format is a CSV with this header (columns in any order, '#' comments allowed):
//   hardware,kind,class,dtype,shape,time_us[,source]
// hardware is a preset name (the device measured), kind the op kind (dot_general, rms_norm...),
// class an op class name, dtype an element type, shape the 'x'-separated OpSignature::table_shape()
// of the op (gemm: batch x m x n x k; elementwise: elements; normalisation: rows x row_length...),
// time_us the measured kernel time in microseconds, source free text (provenance).
//
// Importers (times converted to seconds, shapes as signatures):
//   Vidur per-op CSVs (vidur/compute/<device>/<model>_mlp.csv): one row per (num_tokens,
//     num_tensor_parallel_workers) of one decoder layer; time_stats.<op>.median in milliseconds
//     (CUDA-event kernel times); model columns n_head, n_kv_head, n_embd, n_expanded_embd,
//     use_gated_mlp give the shapes (read_vidur_mlp_csv documents each op).
//   LLMCompass sweeps (llmcompass/<op>_A100.csv, no header): matmul rows "M, N, K, <t>ms,
//     <r>Tflops"; gelu rows "elements, G elements/s"; layernorm and softmax rows "M, N,
//     G elements/s"; time = elements / rate. LLMCompass timed these with the host clock around the
//     call and a synchronise, so they include ~20-50 us of host overhead that CUDA-event times do
//     not. fp16 on an A100 80GB (LLMCompass' device A100_80GB_fp16).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "compute/op_signature.h"

namespace orrery::compute {

// One row of a kernel table.
struct KernelMeasurement {
  std::string hardware;
  std::string kind;
  OpClass op_class = OpClass::kOther;
  ElementType element_type = ElementType::kF32;
  std::vector<std::uint64_t> shape;
  double time_s = 0.0;
  std::string source;
};

// A measured op with its full signature (what the importers produce; validation needs the FLOPs
// and bytes, the table only the shape).
struct MeasuredOp {
  std::string hardware;
  OpSignature op;
  double time_s = 0.0;
  std::string source;  // "file:line op-name"
  std::string label;   // the measurement's own name for the op (attn_pre_proj, gelu...)
};

KernelMeasurement to_measurement(const MeasuredOp& measured);

// Readers. All throw OrreryError naming file:line for malformed rows.
std::vector<KernelMeasurement> read_orrery_table(const std::string& path);
std::vector<MeasuredOp> read_vidur_mlp_csv(const std::string& path, const std::string& hardware = "A100_80GB");
std::vector<MeasuredOp> read_llmcompass_csv(const std::string& path);
// The microbenchmarks of validation/gpu/kernels.py, told apart by their headers (times in
// microseconds, measured on `hardware`):
//   matmul.csv       dtype,m,n,k,time_us,...          dtype bf16, f32 or tf32: dot_general [1, m, n, k]
//   elementwise.csv  op,dtype,elements,time_us,...    add, mul_scalar, exp, gelu_tanh, silu, copy, convert
//   reduction.csv    op,dtype,rows,cols,time_us,...   sum (f32 result), softmax, layer_norm, rms_norm
//   conv.csv         pass,dtype,n,c,h,w,k,r,s,stride,pad,time_us,...  a 2-D NCHW-described layer; pass
//                    fwd, dgrad or wgrad, each as the StableHLO convolution JAX's transpose rules emit
//                    (dgrad: the output gradient dilated by the stride against the flipped kernel;
//                    wgrad: the input, batch and feature dimensions swapped, against the output
//                    gradient dilated by the stride)
// Signatures follow the counting layer: an add reads two operands, exp weighs 8 FLOPs, silu 17, a
// gelu 8; softmax 5 FLOPs per element, layer_norm 7, rms_norm 4 (as the LLMCompass and Vidur readers).
std::vector<MeasuredOp> read_gpu_microbenchmark_csv(const std::string& path, const std::string& hardware);
// Any of the formats, told apart by the header (Orrery: starts with a `hardware` column;
// Vidur: has time_stats.* columns) or the file name (LLMCompass: matmul_, gelu_, layernorm_,
// softmax_ followed by the device).
// validation/gpu microbenchmarks carry no device column: `hardware` names it (an error without).
std::vector<KernelMeasurement> read_kernel_table(const std::string& path, const std::string& hardware = "");

// Orrery's format, with a header; times in microseconds to 9 significant digits.
void write_orrery_table(std::ostream& out, const std::vector<KernelMeasurement>& rows);

// "4096x4096" <-> {4096, 4096}.
std::string format_shape(const std::vector<std::uint64_t>& shape);

}  // namespace orrery::compute
