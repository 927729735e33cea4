// The table estimator: matching, log-log interpolation, scaled neighbours, fallback with a reason,
// transfer to a related device, the table formats, and the Llama-2 7B -> 70B check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compute/roofline.h"
#include "compute/table_estimator.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

using testing::error_of;
using testing::write_temp;

KernelMeasurement gemm_row(std::uint64_t m, double time_us, const std::string& hardware = "A100_80GB") {
  return KernelMeasurement{hardware, "dot_general", OpClass::kGemm, ElementType::kF16, {1, m, 4096, 4096}, time_us * 1e-6,
                           "test"};
}

OpSignature gemm_op(std::uint64_t m, std::uint64_t n = 4096, std::uint64_t k = 4096) {
  return gemm_signature("dot_general", ElementType::kF16, {1, m, n, k});
}

TableEstimator make_table(std::vector<KernelMeasurement> rows) {
  return TableEstimator(std::move(rows), std::make_unique<RooflineEstimator>());
}

TEST(Table, ExactShapeAveragesRepeats) {
  const Hardware a100 = load_hardware("A100_80GB");
  const TableEstimator table = make_table({gemm_row(1024, 100.0), gemm_row(1024, 110.0), gemm_row(2048, 190.0)});
  const Estimate e = table.estimate(gemm_op(1024), a100);
  EXPECT_EQ(e.time, SimTime::from_seconds(105e-6));  // mean of the two repeats
  EXPECT_EQ(e.bound, Bound::kMeasured);
  EXPECT_EQ(e.estimator, "table");
  EXPECT_NE(e.note.find("measured"), std::string::npos) << e.note;
}

TEST(Table, LogLogInterpolationAlongOneDimension) {
  // Between (1024, 100 us) and (4096, 400 us), m = 2048 lies halfway in log m:
  // ln t = ln 100 + (ln 2048 - ln 1024) / (ln 4096 - ln 1024) * (ln 400 - ln 100) -> t = 200 us.
  const Hardware a100 = load_hardware("A100_80GB");
  const TableEstimator table = make_table({gemm_row(1024, 100.0), gemm_row(4096, 400.0), gemm_row(8192, 900.0)});
  const Estimate e = table.estimate(gemm_op(2048), a100);
  EXPECT_NEAR(e.time.seconds(), 200e-6, 1e-12);
  EXPECT_NE(e.note.find("interpolated log-log along dimension 1 between 1x1024x4096x4096 and 1x4096x4096x4096"),
            std::string::npos)
      << e.note;
  // m = 1500: t = 100 * (1500/1024)^(ln 4 / ln 4) = 146.48 us (the segment's slope is 1).
  EXPECT_NEAR(table.estimate(gemm_op(1500), a100).time.seconds(), 100e-6 * 1500.0 / 1024.0, 1e-12);
}

TEST(Table, NearestShapeScaledByRooflineRatio) {
  // m = 16384 lies beyond the measured range: the nearest shape (8192) scaled by
  // R(op) / R(op at 8192), R the preset's roofline time.
  const Hardware a100 = load_hardware("A100_80GB");
  TableOptions one;
  one.neighbours = 1;
  const TableEstimator table({gemm_row(4096, 400.0), gemm_row(8192, 900.0)}, std::make_unique<RooflineEstimator>(), one);
  const OpSignature op = gemm_op(16384);
  const double expected = 900e-6 * roofline_terms(op, a100.roofline).total_s() /
                          roofline_terms(gemm_op(8192), a100.roofline).total_s();
  const Estimate e = table.estimate(op, a100);
  EXPECT_NEAR(e.time.seconds(), expected, 1e-12);
  EXPECT_NE(e.note.find("scaled from the nearest measured shape(s) 1x8192x4096x4096"), std::string::npos) << e.note;
}

TEST(Table, FallsBackWithTheReason) {
  const Hardware a100 = load_hardware("A100_80GB");
  const TableEstimator table = make_table({gemm_row(1024, 100.0)});
  // Another dtype: no candidate rows (f32 differs from the f16 rows in width and peak).
  const Estimate other = table.estimate(gemm_signature("dot_general", ElementType::kF32, {1, 1024, 4096, 4096}), a100);
  EXPECT_EQ(other.estimator, "fallback:roofline");
  EXPECT_NE(other.note.find("table fallback to roofline: no measured dot_general (gemm, f32) in the tables"),
            std::string::npos)
      << other.note;
  // Too far: more than a 100x total change of shape.
  const Estimate far = table.estimate(gemm_op(1024, 1 << 20, 1 << 20), a100);
  EXPECT_NE(far.note.find("table fallback to roofline: the nearest measured shape 1x1024x4096x4096 is"),
            std::string::npos)
      << far.note;
  EXPECT_EQ(far.time, RooflineEstimator().estimate(gemm_op(1024, 1 << 20, 1 << 20), a100).time);
}

TEST(Table, RowsOfAnotherTypeOfTheSameWidthAndPeakStandIn) {
  // The A100 runs bf16 and f16 on its tensor cores at one peak (312 TF): f16 rows cost a bf16 GEMM.
  const Hardware a100 = load_hardware("A100_80GB");
  const TableEstimator table = make_table({gemm_row(1024, 100.0)});
  const Estimate bf16 = table.estimate(gemm_signature("dot_general", ElementType::kBF16, {1, 1024, 4096, 4096}), a100);
  EXPECT_EQ(bf16.estimator, "table");
  EXPECT_EQ(bf16.time, SimTime::from_seconds(100e-6));
  EXPECT_NE(bf16.note.find("measured in f16: same width and peak as bf16 on A100_80GB"), std::string::npos)
      << bf16.note;
  // A device whose bf16 and f16 peaks differ does not substitute.
  Hardware odd = a100;
  odd.roofline.matrix_peak[static_cast<std::size_t>(ElementType::kBF16)] = FlopsPerSecond::from_teraflops(100);
  EXPECT_EQ(table.estimate(gemm_signature("dot_general", ElementType::kBF16, {1, 1024, 4096, 4096}), odd).estimator,
            "fallback:roofline");
}

TEST(Table, TransfersToARelatedDeviceByTheRooflineRatio) {
  // A100_80GB rows costing an op on the A100_40GB: t_40 = t_80 * R_40(op) / R_80(op). For a
  // memory-bound add that is the bandwidth ratio 2039 / 1555 applied to the memory term.
  const Hardware a100_40 = load_hardware("A100_40GB");
  const Hardware a100_80 = load_hardware("A100_80GB");
  const OpSignature add = elementwise_signature("add", OpClass::kElementwise, ElementType::kF16, 1 << 26, 2, 1.0);
  const TableEstimator table = make_table(
      {KernelMeasurement{"A100_80GB", "add", OpClass::kElementwise, ElementType::kF16, {1 << 26}, 250e-6, "test"}});
  const Estimate e = table.estimate(add, a100_40);
  const RooflineTerms on_40 = roofline_terms(add, a100_40.roofline);
  const RooflineTerms on_80 = roofline_terms(add, a100_80.roofline);
  EXPECT_NEAR(e.time.seconds(), 250e-6 * on_40.total_s() / on_80.total_s(), 1e-12);
  EXPECT_NEAR((on_40.memory_s) / (on_80.memory_s), 2039.0 / 1555.0, 1e-12);
  EXPECT_NE(e.note.find("on A100_80GB, transferred to A100_40GB by the roofline ratio"), std::string::npos) << e.note;
  // Rows of the device itself win over rows of another.
  const TableEstimator both = make_table(
      {KernelMeasurement{"A100_80GB", "add", OpClass::kElementwise, ElementType::kF16, {1 << 26}, 250e-6, "test"},
       KernelMeasurement{"A100_40GB", "add", OpClass::kElementwise, ElementType::kF16, {1 << 26}, 333e-6, "test"}});
  EXPECT_EQ(both.estimate(add, a100_40).time, SimTime::from_seconds(333e-6));
}

TEST(Table, UnknownSourceDeviceFallsBack) {
  const TableEstimator table = make_table({gemm_row(1024, 100.0, "NoSuchGPU")});
  const Estimate e = table.estimate(gemm_op(1024), load_hardware("H100"));
  EXPECT_NE(e.note.find("the table's device NoSuchGPU has no loadable preset"), std::string::npos) << e.note;
}

TEST(TableFormat, OrreryCsvRoundTripsAndReportsErrors) {
  const auto path = write_temp("tables/ok.csv",
                               "# a comment\nhardware,kind,class,dtype,shape,time_us,source\n"
                               "A100_80GB,dot_general,gemm,f16,1x1024x4096x4096,100.5,\"bench, run 3\"\n"
                               "A100_80GB,rms_norm,normalisation,f16,4096x4096,104,\n");
  const std::vector<KernelMeasurement> rows = read_kernel_table(path.string());
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].shape, (std::vector<std::uint64_t>{1, 1024, 4096, 4096}));
  EXPECT_DOUBLE_EQ(rows[0].time_s, 100.5e-6);
  EXPECT_EQ(rows[0].source, "bench, run 3");
  EXPECT_EQ(rows[1].op_class, OpClass::kNormalisation);

  const auto bad = write_temp("tables/bad.csv", "hardware,kind,class,dtype,shape,time_us\nA100_80GB,add,elementwise,f16,10x0,5\n");
  const std::string message = error_of([&] { (void)read_kernel_table(bad.string()); });
  EXPECT_NE(message.find(bad.string() + ":2: error: column 'shape'"), std::string::npos) << message;
  const auto bad_class = write_temp("tables/bad_class.csv", "hardware,kind,class,dtype,shape,time_us\nA,add,elemwise,f16,10,5\n");
  EXPECT_NE(error_of([&] { (void)read_kernel_table(bad_class.string()); }).find("unknown op class 'elemwise'"),
            std::string::npos);
  const auto unknown = write_temp("tables/unknown.csv", "a,b\n1,2\n");
  EXPECT_NE(error_of([&] { (void)read_kernel_table(unknown.string()); }).find("not a kernel table Orrery knows"),
            std::string::npos);
}

TEST(TableFormat, GpuMicrobenchmarks) {
  // validation/gpu/kernels.py's four CSVs, told apart by their headers; signatures as counted.
  const auto matmul = write_temp("gpu_bench/matmul.csv",
                                 "dtype,m,n,k,time_us,iters,method\n"
                                 "bf16,64,128,256,2.5,1000,graph\ntf32,8192,8192,8192,2994,2,eager\n");
  const std::vector<MeasuredOp> mm = read_gpu_microbenchmark_csv(matmul.string(), "H200");
  ASSERT_EQ(mm.size(), 2U);
  EXPECT_EQ(mm[0].op, gemm_signature("dot_general", ElementType::kBF16, {1, 64, 128, 256}));
  EXPECT_EQ(mm[1].op.element_type, ElementType::kTF32);
  EXPECT_DOUBLE_EQ(mm[1].time_s, 2994e-6);
  EXPECT_EQ(mm[1].source, "matmul.csv:3");

  const auto ew = write_temp("gpu_bench/elementwise.csv",
                             "op,dtype,elements,time_us,iters,method\n"
                             "add,f32,1024,3,1,graph\nconvert,bf16,1024,3,1,graph\n"
                             "exp,bf16,1024,3,1,graph\ncopy,f32,1024,3,1,graph\n");
  const std::vector<MeasuredOp> e = read_gpu_microbenchmark_csv(ew.string(), "H200");
  ASSERT_EQ(e.size(), 4U);
  EXPECT_EQ(e[0].op, elementwise_signature("add", OpClass::kElementwise, ElementType::kF32, 1024, 2, 1.0));
  EXPECT_EQ(e[1].op.bytes_read.count, 2048U);     // bf16 in
  EXPECT_EQ(e[1].op.bytes_written.count, 4096U);  // f32 out
  EXPECT_EQ(e[2].op.op_class, OpClass::kTranscendental);
  EXPECT_EQ(e[3].op.op_class, OpClass::kDataMovement);

  const auto red = write_temp("gpu_bench/reduction.csv",
                              "op,dtype,rows,cols,time_us,iters,method\n"
                              "sum,bf16,64,1024,3,1,graph\nrms_norm,bf16,64,1024,3,1,graph\n");
  const std::vector<MeasuredOp> r = read_gpu_microbenchmark_csv(red.string(), "H200");
  ASSERT_EQ(r.size(), 2U);
  EXPECT_EQ(r[0].op.op_class, OpClass::kReduction);
  EXPECT_EQ(r[0].op.table_shape(), (std::vector<std::uint64_t>{64, 1024}));
  EXPECT_EQ(r[0].op.bytes_written.count, 64U * 4U);
  EXPECT_EQ(r[1].op.op_class, OpClass::kNormalisation);

  // As a table they need the device named; rows then carry it.
  EXPECT_NE(error_of([&] { (void)read_kernel_table(matmul.string()); }).find("names no device"),
            std::string::npos);
  EXPECT_EQ(read_kernel_table(matmul.string(), "H200").front().hardware, "H200");

  // Bad rows name file:line and the column.
  const auto bad_type = write_temp("gpu_bench/bad_type.csv", "dtype,m,n,k,time_us\nf16,64,64,64,2\n");
  EXPECT_NE(error_of([&] {
              (void)read_gpu_microbenchmark_csv(bad_type.string(), "H200");
            }).find(bad_type.string() + ":2: error: column 'dtype': expected bf16, f32 or tf32, got 'f16'"),
            std::string::npos);
  const auto bad_op =
      write_temp("gpu_bench/bad_op.csv", "op,dtype,elements,time_us\nadd,f32,8,1\ncos,f32,8,1\n");
  EXPECT_NE(error_of([&] {
              (void)read_gpu_microbenchmark_csv(bad_op.string(), "H200");
            }).find(bad_op.string() + ":3: error: column 'op': unknown elementwise op 'cos'"),
            std::string::npos);
  const auto bad_time = write_temp("gpu_bench/bad_time.csv", "op,dtype,rows,cols,time_us\nsum,f32,8,8,0\n");
  EXPECT_NE(error_of([&] {
              (void)read_gpu_microbenchmark_csv(bad_time.string(), "H200");
            }).find(bad_time.string() + ":2: error: a kernel time must be positive"),
            std::string::npos);
  const auto bad_conv = write_temp("gpu_bench/bad_conv.csv",
                                   "pass,dtype,n,c,h,w,k,r,s,stride,pad,time_us\n"
                                   "bwd,bf16,1,1,8,8,1,3,3,1,1,5\nfwd,bf16,1,1,2,2,1,7,7,1,1,5\n");
  EXPECT_NE(error_of([&] {
              (void)read_gpu_microbenchmark_csv(bad_conv.string(), "H200");
            }).find(bad_conv.string() + ":2: error: column 'pass': expected fwd, dgrad or wgrad, got 'bwd'"),
            std::string::npos);
  const auto negative_pad = write_temp("gpu_bench/negative_pad.csv",
                                       "pass,dtype,n,c,h,w,k,r,s,stride,pad,time_us\n"
                                       "dgrad,bf16,1,1,3,3,1,1,1,2,1,5\n");
  EXPECT_NE(error_of([&] {
              (void)read_gpu_microbenchmark_csv(negative_pad.string(), "H200");
            }).find(negative_pad.string() + ":2: error: pass dgrad with pad 1 > kernel - 1"),
            std::string::npos);
  const auto not_bench = write_temp("gpu_bench/other.csv", "a,b\n1,2\n");
  EXPECT_NE(error_of([&] {
              (void)read_gpu_microbenchmark_csv(not_bench.string(), "H200");
            }).find("not a validation/gpu microbenchmark CSV"),
            std::string::npos);
}

TEST(TableFormat, VidurColumnsAndUnits) {
  const std::filesystem::path data = testing::shared_compute_data();
  ORRERY_SKIP_WITHOUT_SHARED_DATA(data);
  const std::vector<MeasuredOp> ops = read_vidur_mlp_csv((data / "vidur/compute/a100/Llama-2-7b-hf_mlp.csv").string());
  ASSERT_EQ(ops.size(), 1044U * 10U);  // 1044 rows x 10 ops
  // The first row: 4096 tokens, TP 1. attn_pre_proj is the QKV GEMM 4096 x (32 + 2*32)*128 x 4096,
  // time_stats.attn_pre_proj.median = 1.911 ms.
  const MeasuredOp& qkv = ops[2];
  EXPECT_EQ(qkv.label, "attn_pre_proj");
  EXPECT_EQ(qkv.op.gemm, (GemmShape{1, 4096, 12288, 4096}));
  EXPECT_DOUBLE_EQ(qkv.time_s, 1.911e-3);
  // mlp_up_proj of the gated MLP: N = 2 * 11008.
  EXPECT_EQ(ops[6].op.gemm, (GemmShape{1, 4096, 22016, 4096}));
  EXPECT_EQ(ops[9].op.kind, "add");
  EXPECT_EQ(ops[9].op.elements, 4096U * 4096U);
}

TEST(TableFormat, LlmCompassSweeps) {
  const std::filesystem::path data = testing::shared_compute_data();
  ORRERY_SKIP_WITHOUT_SHARED_DATA(data);
  // matmul: "64, 12288, 12288, 0.1900ms, 101.7124Tflops": M x N x K, time in ms.
  const std::vector<MeasuredOp> matmul = read_llmcompass_csv((data / "llmcompass/matmul_A100.csv").string());
  EXPECT_EQ(matmul.front().op.gemm, (GemmShape{1, 64, 12288, 12288}));
  EXPECT_DOUBLE_EQ(matmul.front().time_s, 0.19e-3);
  // gelu: "1024, 0.0212622..." G elements/s: t = 1024 / (0.0212622e9) = 48.2 us.
  const std::vector<MeasuredOp> gelu = read_llmcompass_csv((data / "llmcompass/gelu_A100.csv").string());
  EXPECT_NEAR(gelu.front().time_s, 1024.0 / 0.021262214336633663e9, 1e-15);
  const std::string message =
      error_of([&] { (void)read_llmcompass_csv((data / "llmcompass/gelu_MI210.csv").string()); });
  EXPECT_NE(message.find("only the A100"), std::string::npos) << message;
}

// Fit on the Llama-2-7B shapes, predict the 70B shapes: median error at most 10% (issue 4).
TEST(TableValidation, Llama2SevenToSeventyMedianErrorAtMostTenPercent) {
  const std::filesystem::path data = testing::shared_compute_data();
  ORRERY_SKIP_WITHOUT_SHARED_DATA(data);
  const std::string dir = (data / "vidur/compute/a100/").string();
  std::vector<KernelMeasurement> train;
  for (const MeasuredOp& m : read_vidur_mlp_csv(dir + "Llama-2-7b-hf_mlp.csv")) {
    train.push_back(to_measurement(m));
  }
  const TableEstimator table = make_table(std::move(train));
  const Hardware a100 = load_hardware("A100_80GB");
  std::vector<double> errors;
  for (const MeasuredOp& m : read_vidur_mlp_csv(dir + "Llama-2-70b-hf_mlp.csv")) {
    const Estimate e = table.estimate(m.op, a100);
    EXPECT_EQ(e.estimator, "table") << e.note;
    errors.push_back(std::abs(e.time.seconds() - m.time_s) / m.time_s);
  }
  std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2), errors.end());
  const double median = errors[errors.size() / 2];
  std::printf("Llama-2 7B -> 70B table prediction: median abs. rel. error %.2f%% over %zu kernels\n", 100 * median,
              errors.size());
  EXPECT_LE(median, 0.10);
}

}  // namespace
}  // namespace orrery::compute
