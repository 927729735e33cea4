#include <gtest/gtest.h>

#include <cmath>

#include "util/error.h"
#include "util/units.h"

namespace orrery {
namespace {

TEST(SimTime, RoundsUpToWholePicoseconds) {
  // from_seconds(s) = ceil(s * 1e12) ps, except within a relative 1e-12 of a whole picosecond.
  EXPECT_EQ(SimTime::from_seconds(1e-12).ps(), 1U);
  EXPECT_EQ(SimTime::from_seconds(1.5e-12).ps(), 2U);
  EXPECT_EQ(SimTime::from_seconds(0.2e-12).ps(), 1U);  // positive stays positive
  EXPECT_EQ(SimTime::from_seconds(0.0).ps(), 0U);
  EXPECT_EQ(SimTime::from_nanoseconds(1.0).ps(), 1000U);  // not 1001 from 1e-9 representation error
  EXPECT_EQ(SimTime::from_seconds(1e-9).ps(), 1000U);
  EXPECT_EQ(SimTime::from_seconds(0.1).ps(), 100'000'000'000U);
  EXPECT_EQ(SimTime::from_microseconds(0.1).ps(), 100'000U);
}

TEST(SimTime, RejectsNegativeAndNan) {
  EXPECT_THROW((void)SimTime::from_seconds(-1e-12), OrreryError);
  EXPECT_THROW((void)SimTime::from_seconds(std::nan("")), OrreryError);
}

TEST(Bytes, SumsAndMultiplesSaturateAtMax) {
  EXPECT_EQ((Bytes{3} + Bytes{4}).count, 7U);
  EXPECT_EQ((Bytes{3} * 5).count, 15U);
  EXPECT_TRUE((Bytes::max() + Bytes{1}).is_max());
  EXPECT_TRUE((Bytes{1ULL << 62} * 8).is_max());
  Bytes total{1ULL << 63};
  total += Bytes{1ULL << 63};
  EXPECT_TRUE(total.is_max());
  EXPECT_FALSE(Bytes{1ULL << 63}.is_max());
}

TEST(SimTime, SaturatesAtMax) {
  EXPECT_TRUE(SimTime::from_seconds(1e30).is_max());
  EXPECT_TRUE((SimTime::max() + SimTime::from_ps(1)).is_max());
  EXPECT_TRUE((SimTime::from_ps(1ULL << 63) * 4).is_max());
  EXPECT_EQ((SimTime::from_ps(5) + SimTime::from_ps(7)).ps(), 12U);
  EXPECT_EQ((SimTime::from_ps(7) - SimTime::from_ps(5)).ps(), 2U);
}

TEST(Units, TransferSeconds) {
  // t = bytes / rate: 1 GB at 1e9 B/s takes one second; ASTRA-sim's GB/s is 2^30 B/s.
  EXPECT_DOUBLE_EQ(transfer_seconds(Bytes{1'000'000'000}, BytesPerSecond::from_gigabytes(1.0)), 1.0);
  EXPECT_DOUBLE_EQ(transfer_seconds(Bytes{1ULL << 30}, BytesPerSecond::from_gibibytes(1.0)), 1.0);
}

TEST(Error, RendersLocationLineAndCaret) {
  Error error{ErrorCode::kParse, "unexpected token", SourceLocation{"model.mlir", 3, 7, "  %0 = foo"}, {"while parsing"}};
  EXPECT_EQ(error.render(),
            "model.mlir:3:7: error: unexpected token\n"
            "    %0 = foo\n"
            "        ^\n"
            "note: while parsing");
}

TEST(Error, RendersWithoutLocation) {
  OrreryError error(ErrorCode::kModel, "ranks 0 and 3 disagree");
  EXPECT_STREQ(error.what(), "error: ranks 0 and 3 disagree");
  EXPECT_EQ(error.code(), ErrorCode::kModel);
}

}  // namespace
}  // namespace orrery
