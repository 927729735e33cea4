// SCALE-Sim's own files, read so that the systolic model can be checked against SCALE-Sim's
// reports (../shared/data/compute/scalesim_golden): the .cfg architecture file, topology CSVs
// (convolution layers or M, N, K GEMMs) and COMPUTE_REPORT CSVs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compute/op_signature.h"
#include "compute/systolic.h"

namespace orrery::compute {

struct ScaleSimConfig {
  std::string run_name;
  std::uint32_t array_height = 0;  // rows R
  std::uint32_t array_width = 0;   // columns C
  double ifmap_sram_kb = 0.0;
  double filter_sram_kb = 0.0;
  double ofmap_sram_kb = 0.0;
  Dataflow dataflow = Dataflow::kOutputStationary;
  double bandwidth_words_per_cycle = 0.0;  // `Bandwidth`
  bool user_bandwidth = false;             // InterfaceBandwidth: USER (CALC: no stalls)

  // The array as the fold model sees it: SCALE-Sim's words are one byte, its KB 1024 bytes; CALC
  // bandwidth is unlimited.
  [[nodiscard]] SystolicArray array() const;
};

struct ScaleSimLayer {
  std::string name;
  GemmShape gemm;  // the layer as a GEMM (convolutions through im2col)
};

struct ScaleSimReportRow {
  std::uint64_t layer = 0;
  std::uint64_t total_cycles = 0;  // "Total Cycles" (v3 also reports cycles including prefetch)
  std::uint64_t stall_cycles = 0;
  [[nodiscard]] std::uint64_t compute_cycles() const { return total_cycles - stall_cycles; }
};

// Each reader throws OrreryError naming file:line for malformed content.
ScaleSimConfig read_scalesim_config(const std::string& path);
// A convolution topology (Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width,
// Channels, Num Filter, Strides) or a GEMM one (Layer, M, N, K), told apart by the header.
std::vector<ScaleSimLayer> read_scalesim_topology(const std::string& path);
std::vector<ScaleSimReportRow> read_scalesim_compute_report(const std::string& path);

// The runs behind the reports in ../shared/data/compute/scalesim_golden (SCALE-Sim keeps the
// config and topology beside the report but not which run made it; the mapping is by report name):
//   v2/COMPUTE_REPORT_alexnet_conv1_ws_32x32  v2/scale.cfg as weight-stationary, v2/alexnet_part
//   v3/COMPUTE_REPORT_calc                     v3/scale.cfg (ws, CALC bandwidth), v2/alexnet_part
//   v3/COMPUTE_REPORT_user_{ws,os,is}          v3/scale.cfg with that dataflow and USER bandwidth
//                                              (Bandwidth: 10 words/cycle), v3/test_mnk_input
struct ScaleSimGoldenCase {
  std::filesystem::path report;
  std::filesystem::path config;
  std::filesystem::path topology;
  Dataflow dataflow = Dataflow::kWeightStationary;
  bool user_bandwidth = false;
};
// Every COMPUTE_REPORT*.csv under `golden_dir`, sorted; one that the mapping above does not cover
// throws OrreryError(kUnsupported), so a new report cannot be skipped silently.
std::vector<ScaleSimGoldenCase> scalesim_golden_cases(const std::filesystem::path& golden_dir);

}  // namespace orrery::compute
