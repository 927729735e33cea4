/* Orrery estimator plugins: the C ABI, version 1 (docs/compute.md, "Plugins").
 *
 * A plugin is a shared library that exports one function,
 *
 *     const OrreryEstimatorPlugin* orrery_estimator_plugin(void);
 *
 * returning a table that lives as long as the library. Orrery checks abi_version against
 * ORRERY_ESTIMATOR_ABI_VERSION and refuses a mismatch; it calls create() once with the scenario's
 * plugin_options text, estimate() once per distinct op (results are memoised), and destroy() when
 * the run ends. Calls are serialised: a plugin need not be thread-safe. Strings Orrery passes are
 * valid only during the call. Units: seconds, FLOPs, bytes, FLOP/s, B/s, Hz.
 *
 * This header is C (C99) so that plugins can be written in C, C++, Rust or anything with a C FFI.
 */
#ifndef ORRERY_COMPUTE_PLUGIN_ABI_H
#define ORRERY_COMPUTE_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORRERY_ESTIMATOR_ABI_VERSION 1u
#define ORRERY_ESTIMATOR_PLUGIN_SYMBOL "orrery_estimator_plugin"

/* One op: the fields of compute::OpSignature (op_signature.h). */
typedef struct OrreryOp {
  uint32_t struct_size;     /* sizeof(OrreryOp) in the Orrery that calls */
  const char* kind;         /* "dot_general", "exponential", a custom-call target... */
  const char* op_class;     /* "gemm", "convolution", "elementwise", ... */
  const char* element_type; /* StableHLO spelling: "bf16", "f32", "f8E4M3FN", ..., or "tf32" */
  uint32_t element_bits;    /* storage bits per element */
  uint64_t gemm_batch, gemm_m, gemm_n, gemm_k;
  uint32_t conv_spatial_rank;
  uint64_t conv_batch, conv_input_features, conv_output_features, conv_feature_groups, conv_batch_groups;
  uint64_t conv_input_size[3], conv_kernel_size[3], conv_output_size[3], conv_stride[3];
  uint64_t conv_padding_low[3], conv_padding_high[3], conv_input_dilation[3], conv_kernel_dilation[3];
  uint64_t elements, row_length;
  double flops;
  uint64_t bytes_read, bytes_written;
} OrreryOp;

/* The hardware preset the op runs on. */
typedef struct OrreryHardware {
  uint32_t struct_size;
  const char* name;          /* preset name: "H100", "TPUv4", ... */
  double peak_flops;         /* the peak that applies to this op (matrix unit for gemm and
                                convolution at the op's element type, vector unit otherwise) */
  double memory_bandwidth;   /* B/s */
  double launch_overhead_s;
  uint32_t has_systolic;     /* 1 when the fields below are set */
  uint32_t array_rows, array_cols, arrays;
  double clock_hz;
} OrreryHardware;

typedef struct OrreryEstimate {
  double time_s;   /* required: finite and >= 0 */
  char bound[16];  /* optional: "compute", "memory", "overhead"; empty means "external" */
  char note[256];  /* optional: why, shown in traces */
} OrreryEstimate;

typedef struct OrreryEstimatorPlugin {
  uint32_t abi_version; /* ORRERY_ESTIMATOR_ABI_VERSION the plugin was built against */
  const char* name;     /* short name, shown as "plugin:NAME" */
  /* Returns the plugin's state (any non-NULL pointer), or NULL with a message in `error`. */
  void* (*create)(const char* options, char* error, size_t error_size);
  /* Fills `result` and returns 0, or returns non-zero with a message in `error`. */
  int (*estimate)(void* state, const OrreryOp* op, const OrreryHardware* hardware, OrreryEstimate* result,
                  char* error, size_t error_size);
  void (*destroy)(void* state);
} OrreryEstimatorPlugin;

typedef const OrreryEstimatorPlugin* (*OrreryEstimatorPluginEntry)(void);

#ifdef __cplusplus
}
#endif

#endif /* ORRERY_COMPUTE_PLUGIN_ABI_H */
