// Chakra execution traces (frontend/chakra): the reader on ASTRA-sim's own files and on traces
// written here with protobuf (every integer width, gzip, each malformed case), and the programs
// load_workload builds (ranks that share a graph, durations, groups, point-to-point channels).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "et_def.pb.h"
#include "frontend/chakra/trace.h"
#include "frontend/chakra/workload.h"
#include "frontend/chakra/writer.h"
#include "pdes/in_process_group.h"
#include "workload/collectives.h"
#include "workload/dump.h"

namespace orrery::frontend::chakra {
namespace {

namespace fs = std::filesystem;
namespace pb = ::ChakraProtoMsg;

const fs::path kData = fs::path(ORRERY_SOURCE_DIR) / "tests/data/chakra/astra-sim";

// Writes length-prefixed messages (Chakra's framing), optionally gzip-compressed.
class TraceWriter {
 public:
  TraceWriter() {
    pb::GlobalMetadata metadata;
    metadata.set_version("0.0.4");
    append(metadata);
  }
  pb::Node& add(std::uint64_t id, pb::NodeType type, std::vector<std::uint64_t> deps = {}) {
    nodes_.emplace_back();
    pb::Node& n = nodes_.back();
    n.set_id(id);
    n.set_name("node" + std::to_string(id));
    n.set_type(type);
    for (const auto d : deps) {
      n.add_data_deps(d);
    }
    return n;
  }
  std::string bytes() {
    std::string out = head_;
    for (const pb::Node& n : nodes_) {
      append_to(out, n);
    }
    return out;
  }
  void write(const fs::path& path, bool gzip = false) {
    std::string data = bytes();
    if (gzip) {
      std::string compressed;
      {
        google::protobuf::io::StringOutputStream raw(&compressed);
        google::protobuf::io::GzipOutputStream::Options options;
        options.format = google::protobuf::io::GzipOutputStream::GZIP;
        google::protobuf::io::GzipOutputStream stream(&raw, options);
        void* buffer = nullptr;
        int size = 0;
        std::size_t done = 0;
        while (done < data.size() && stream.Next(&buffer, &size)) {
          const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(size), data.size() - done);
          std::memcpy(buffer, data.data() + done, n);
          done += n;
          if (n < static_cast<std::size_t>(size)) {
            stream.BackUp(static_cast<int>(static_cast<std::size_t>(size) - n));
          }
        }
        stream.Close();
      }
      data = compressed;
    }
    std::ofstream(path, std::ios::binary) << data;
  }

 private:
  template <class M>
  static void append_to(std::string& out, const M& message) {
    std::string body = message.SerializeAsString();
    std::uint64_t length = body.size();
    do {
      auto byte = static_cast<char>(length & 0x7f);
      length >>= 7;
      if (length != 0) {
        byte = static_cast<char>(byte | 0x80);
      }
      out += byte;
    } while (length != 0);
    out += body;
  }
  template <class M>
  void append(const M& message) {
    append_to(head_, message);
  }
  std::string head_;
  std::vector<pb::Node> nodes_;
};

void attr_int64(pb::Node& n, const std::string& name, std::int64_t value) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}
void attr_int32(pb::Node& n, const std::string& name, std::int32_t value) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int32_val(value);
}
void attr_uint64(pb::Node& n, const std::string& name, std::uint64_t value) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_uint64_val(value);
}

class ChakraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orrery_chakra_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  [[nodiscard]] std::string prefix() const { return (dir_ / "t").string(); }
  [[nodiscard]] std::string file(int rank) const { return prefix() + "." + std::to_string(rank) + ".et"; }
  fs::path dir_;
};

TEST(ChakraReader, ReadsAstraSimMicrobenchmark) {
  auto trace = read_trace((kData / "microbenchmarks/all_reduce/4npus_1MB/all_reduce.2.et").string());
  ASSERT_TRUE(trace) << trace.error().render();
  EXPECT_EQ(trace->version, "0.0.4");
  ASSERT_EQ(trace->nodes.size(), 1U);
  const Node& n = trace->nodes[0];
  EXPECT_EQ(n.type, NodeType::kCollective);
  EXPECT_EQ(n.comm_type, CommType::kAllReduce);
  EXPECT_EQ(n.comm_size, 1048576U);
  EXPECT_EQ(n.id, 2U);  // each rank numbers its nodes differently
  EXPECT_FALSE(n.is_cpu_op);
}

TEST(ChakraReader, ReadsAstraSimSendRecvRing) {
  auto trace = read_trace((kData / "custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.3.et").string());
  ASSERT_TRUE(trace) << trace.error().render();
  EXPECT_EQ(trace->version, "1.0.2-chakra.0.0.4");  // the metadata's schema attribute
  ASSERT_GT(trace->nodes.size(), 3U);
  EXPECT_EQ(trace->nodes[0].type, NodeType::kSend);
  EXPECT_EQ(trace->nodes[0].comm_dst, 4U);
  EXPECT_EQ(trace->nodes[1].type, NodeType::kRecv);
  EXPECT_EQ(trace->nodes[1].comm_src, 2U);
  EXPECT_EQ(trace->nodes[2].type, NodeType::kComp);
  EXPECT_EQ(trace->nodes[2].duration_micros, 7U);
  EXPECT_EQ(trace->nodes[2].data_deps, std::vector<std::uint64_t>{1});
}

TEST(ChakraReader, ReadsThePyTorchTraceInPlace) {
  const fs::path path = fs::path(ORRERY_SHARED_DATA) / "chakra/pytorch/chakra.0.et";
  if (!fs::exists(path)) {
    GTEST_SKIP() << "needs " << path << " (../shared/data beside the clone)";
  }
  auto trace = read_trace(path.string());
  ASSERT_TRUE(trace) << trace.error().render();
  EXPECT_EQ(trace->nodes.size(), 3664U);
  std::size_t device_collectives = 0;
  for (const Node& n : trace->nodes) {
    device_collectives += n.type == NodeType::kCollective && !n.is_cpu_op ? 1 : 0;
  }
  EXPECT_EQ(device_collectives, 7U);
}

TEST_F(ChakraTest, AcceptsEveryIntegerWidthAndGzip) {
  TraceWriter w;
  pb::Node& c = w.add(5, pb::COMM_COLL_NODE);
  attr_int32(c, "is_cpu_op", 0);  // STAGE's int32
  attr_int64(c, "comm_type", 2);
  attr_uint64(c, "comm_size", 4096);
  auto* pg = c.add_attr();
  pg->set_name("pg_name");
  pg->set_string_val("7");
  w.write(file(0), /*gzip=*/true);
  auto trace = read_trace(file(0));
  ASSERT_TRUE(trace) << trace.error().render();
  ASSERT_EQ(trace->nodes.size(), 1U);
  EXPECT_EQ(trace->nodes[0].comm_type, CommType::kAllGather);
  EXPECT_EQ(trace->nodes[0].comm_size, 4096U);
  EXPECT_EQ(trace->nodes[0].pg_name, "7");
}

TEST_F(ChakraTest, MalformedFilesNameTheByteAndNode) {
  TraceWriter w;
  pb::Node& c = w.add(0, pb::COMM_COLL_NODE);
  attr_int64(c, "comm_type", 0);
  attr_int64(c, "comm_size", 1024);
  w.add(1, pb::COMP_NODE, {0}).set_duration_micros(3);
  const std::string good = w.bytes();
  auto write = [&](const std::string& bytes) { std::ofstream(file(0), std::ios::binary) << bytes; };

  write(good.substr(0, good.size() - 3));
  auto truncated = read_trace(file(0));
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("node 1 is"), std::string::npos) << truncated.error().message;
  EXPECT_NE(truncated.error().message.find("truncated"), std::string::npos);

  write(good + "\xff\xff");
  auto varint = read_trace(file(0));
  ASSERT_FALSE(varint);
  EXPECT_NE(varint.error().message.find("truncated length prefix of node 2"), std::string::npos)
      << varint.error().message;

  write("");
  auto empty = read_trace(file(0));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("empty file"), std::string::npos);

  write(std::string("\x03\xff\xff\xff", 4));
  auto garbage = read_trace(file(0));
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message.find("GlobalMetadata"), std::string::npos) << garbage.error().message;

  auto missing = read_trace(file(9));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
}

TEST_F(ChakraTest, BadAttributesAreNamed) {
  {
    TraceWriter w;
    attr_int64(w.add(0, pb::COMM_COLL_NODE), "comm_size", -1);
    w.write(file(0));
    auto trace = read_trace(file(0));
    ASSERT_FALSE(trace);
    EXPECT_NE(trace.error().message.find("attribute comm_size = -1 is out of range"), std::string::npos)
        << trace.error().message;
    EXPECT_NE(trace.error().message.find("node 0 (id 0, 'node0')"), std::string::npos);
  }
  {
    TraceWriter w;
    auto* a = w.add(0, pb::COMM_COLL_NODE).add_attr();
    a->set_name("comm_type");
    a->set_string_val("ALL_REDUCE");
    w.write(file(0));
    auto trace = read_trace(file(0));
    ASSERT_FALSE(trace);
    EXPECT_NE(trace.error().message.find("comm_type must be an integer"), std::string::npos) << trace.error().message;
  }
}

// Four ranks of one collective: one program with four devices, the group all of them.
TEST(ChakraWorkload, AstraSimMicrobenchmarkIsOneProgram) {
  WorkloadOptions options;
  options.prefix = (kData / "microbenchmarks/reduce_scatter/8npus_1MB/reduce_scatter").string();
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  EXPECT_EQ(loaded->ranks, 8U);
  ASSERT_EQ(loaded->programs.size(), 1U);
  const Program& p = loaded->programs[0];
  EXPECT_EQ(p.ranks, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(p.program->num_devices(), 8U);
  std::size_t collectives = 0;
  for (workload::OpId id = 0; id < p.program->op_count(); ++id) {
    const workload::Op& op = p.program->op(id);
    if (op.kind != workload::OpKind::kReduceScatter) {
      continue;
    }
    ++collectives;
    auto groups = workload::device_groups(*p.program, op);
    ASSERT_TRUE(groups) << groups.error().render();
    ASSERT_EQ(groups.value().size(), 1U);
    EXPECT_EQ(groups.value()[0].size(), 8U);
    EXPECT_EQ(p.program->types().byte_size(p.program->value_type(p.program->operands(op)[0])), 1048576U);
  }
  EXPECT_EQ(collectives, 1U);
}

TEST(ChakraWorkload, SendRecvRingSharesOneGraph) {
  WorkloadOptions options;
  options.prefix = (kData / "custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce").string();
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  ASSERT_EQ(loaded->programs.size(), 1U);
  const Program& p = loaded->programs[0];
  std::size_t sends = 0;
  for (workload::OpId id = 0; id < p.program->op_count(); ++id) {
    const workload::Op& op = p.program->op(id);
    if (op.kind != workload::OpKind::kSend) {
      continue;
    }
    ++sends;
    auto pairs = workload::device_pairs(*p.program, op);
    ASSERT_TRUE(pairs) << pairs.error().render();
    ASSERT_EQ(pairs.value().size(), 8U);
    for (const auto& [source, target] : pairs.value()) {
      EXPECT_EQ(target, (source + 1) % 8);  // each rank sends to the next
    }
  }
  EXPECT_EQ(sends, 14U);
  // Compute nodes take their trace durations (7 us each).
  std::size_t timed = 0;
  for (const NodeCost& c : p.costs) {
    if (c.kind == CostKind::kDuration) {
      EXPECT_EQ(c.duration_ps, 7'000'000U);
      ++timed;
    }
  }
  EXPECT_EQ(timed, 7U);
}

TEST_F(ChakraTest, DurationsMayDifferAndTheSlowestCounts) {
  for (int rank = 0; rank < 2; ++rank) {
    TraceWriter w;
    w.add(10 + rank, pb::COMP_NODE).set_duration_micros(rank == 0 ? 5 : 8);
    pb::Node& c = w.add(20 + rank, pb::COMM_COLL_NODE, {static_cast<std::uint64_t>(10 + rank)});
    attr_int64(c, "comm_type", 0);
    attr_int64(c, "comm_size", 64);
    w.write(file(rank));
  }
  WorkloadOptions options;
  options.prefix = prefix();
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  ASSERT_EQ(loaded->programs.size(), 1U);
  EXPECT_EQ(loaded->programs[0].costs[0].duration_ps, 8'000'000U);
  ASSERT_EQ(loaded->warnings.size(), 1U);
  EXPECT_NE(loaded->warnings[0].find("differ"), std::string::npos) << loaded->warnings[0];
}

// A pipeline shift 0 -> 1 -> 2 -> 3: ranks 1 and 2 record one graph (their peers and durations
// differ) but send to ranks of different graphs (2 and 3), so they are split, each with its own
// file's trace and durations; then two ranks that send to one are split the same way.
TEST_F(ChakraTest, SharedGraphsAreSplitWherePeersNeedIt) {
  auto p2p = [](TraceWriter& w, std::uint64_t id, pb::NodeType type, std::int32_t peer,
                std::vector<std::uint64_t> deps) {
    pb::Node& n = w.add(id, type, std::move(deps));
    attr_int64(n, "comm_size", 64);
    attr_int32(n, type == pb::COMM_SEND_NODE ? "comm_dst" : "comm_src", peer);
    attr_int32(n, "comm_tag", 0);
  };
  for (int rank = 0; rank < 4; ++rank) {
    TraceWriter w;
    w.add(0, pb::COMP_NODE).set_duration_micros(10 + rank);
    if (rank > 0) {
      p2p(w, 1, pb::COMM_RECV_NODE, rank - 1, {});
    }
    if (rank < 3) {
      p2p(w, 2, pb::COMM_SEND_NODE, rank + 1, {0});
    }
    w.write(file(rank));
  }
  WorkloadOptions options;
  options.prefix = prefix();
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  ASSERT_EQ(loaded->programs.size(), 4U);
  std::map<std::uint32_t, const Program*> by_rank;
  for (const Program& program : loaded->programs) {
    ASSERT_EQ(program.ranks.size(), 1U) << program.label;
    by_rank[program.ranks[0]] = &program;
  }
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(by_rank.at(rank)->label, file(static_cast<int>(rank)));  // its own file names its nodes
    EXPECT_EQ(by_rank.at(rank)->costs[0].duration_ps, (10 + rank) * 1'000'000ULL);  // its own durations
  }
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings[0];

  for (int rank = 0; rank < 3; ++rank) {  // ranks 0 and 1 send to rank 2
    TraceWriter w;
    if (rank < 2) {
      p2p(w, 0, pb::COMM_SEND_NODE, 2, {});
    } else {
      p2p(w, 0, pb::COMM_RECV_NODE, 0, {});
      p2p(w, 1, pb::COMM_RECV_NODE, 1, {});
    }
    w.write(file(rank));
  }
  fs::remove(file(3));
  auto fan_in = load_workload(options);
  ASSERT_TRUE(fan_in) << fan_in.error().render();
  EXPECT_EQ(fan_in->programs.size(), 3U);
}

TEST_F(ChakraTest, CommGroupsAndInvolvedDimensionsMakeTheGroups) {
  for (int rank = 0; rank < 4; ++rank) {
    TraceWriter w;
    pb::Node& a = w.add(0, pb::COMM_COLL_NODE);
    attr_int64(a, "comm_type", 0);
    attr_int64(a, "comm_size", 64);
    auto* pg = a.add_attr();
    pg->set_name("pg_name");
    pg->set_string_val("pairs");
    pb::Node& b = w.add(1, pb::COMM_COLL_NODE, {0});
    attr_int64(b, "comm_type", 2);
    attr_int64(b, "comm_size", 64);
    auto* dims = b.add_attr();
    dims->set_name("involved_dim");
    dims->mutable_bool_list()->add_values(false);
    dims->mutable_bool_list()->add_values(true);
    w.write(file(rank));
  }
  // "pairs" is not a group of one file: ranks 0-1 and 2-3 each name their own.
  std::ofstream(dir_ / "groups.json") << R"({"pairs": [0, 1, 2, 3]})";
  WorkloadOptions options;
  options.prefix = prefix();
  options.comm_groups = (dir_ / "groups.json").string();
  options.dimensions = {2, 2};
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  const workload::Program& p = *loaded->programs[0].program;
  std::vector<workload::DeviceGroups> groups;
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    if (workload::op_category(p.op(id).kind) == workload::OpCategory::kCollective) {
      groups.push_back(workload::device_groups(p, p.op(id)).value());
    }
  }
  ASSERT_EQ(groups.size(), 2U);
  EXPECT_EQ(groups[0], (workload::DeviceGroups{{0, 1, 2, 3}}));
  // involved_dim [false, true] on a 2x2 network: ranks that differ only in dimension 1.
  EXPECT_EQ(groups[1], (workload::DeviceGroups{{0, 2}, {1, 3}}));

  options.dimensions = {};
  auto without = load_workload(options);
  ASSERT_FALSE(without);
  EXPECT_NE(without.error().message.find("involved_dim"), std::string::npos) << without.error().message;

  options.dimensions = {2, 2};
  options.comm_groups = "";
  auto unknown = load_workload(options);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("process group 'pairs' is not in the communicator-group file"),
            std::string::npos)
      << unknown.error().message;
}

TEST_F(ChakraTest, GroupsThatRanksSeeDifferentlyAreRefused) {
  // No pg_name: each rank's group is the last group of the file that holds it (ASTRA-sim's rule).
  for (int rank = 0; rank < 4; ++rank) {
    TraceWriter w;
    pb::Node& a = w.add(0, pb::COMM_COLL_NODE);
    attr_int64(a, "comm_type", 0);
    attr_int64(a, "comm_size", 64);
    w.write(file(rank));
  }
  WorkloadOptions options;
  options.prefix = prefix();
  options.comm_groups = (dir_ / "groups.json").string();
  const auto load = [&](const char* json) {
    std::ofstream(options.comm_groups) << json;
    return load_workload(options);
  };
  auto fine = load(R"({"a": [0, 1], "b": [2, 3]})");
  ASSERT_TRUE(fine) << fine.error().render();
  const workload::Program& p = *fine->programs[0].program;
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    if (workload::op_category(p.op(id).kind) == workload::OpCategory::kCollective) {
      EXPECT_EQ(workload::device_groups(p, p.op(id)).value(), (workload::DeviceGroups{{0, 1}, {2, 3}}));
    }
  }
  // Rank 0 sees {0, 1}; rank 1 sees {1, 2, 3}.
  auto disagree = load(R"({"a": [0, 1], "b": [1, 2, 3]})");
  ASSERT_FALSE(disagree);
  EXPECT_NE(disagree.error().message.find("ranks 0 and 1 disagree on the collective's group"), std::string::npos)
      << disagree.error().message;
  // Rank 0 sees {0, 2}; rank 1 sees {0, 1}, which would put rank 0 in two groups.
  auto twice = load(R"({"a": [0, 1], "b": [0, 2], "c": [3]})");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("rank 0 would be in two groups of the collective"), std::string::npos)
      << twice.error().message;
}

TEST_F(ChakraTest, WrittenTracesReadBackNodeForNode) {
  // Two ranks: a kernel, an all-reduce in group "1", a send to the other rank and a recv from it.
  for (std::uint32_t rank = 0; rank < 2; ++rank) {
    Trace trace;
    Node& kernel = trace.nodes.emplace_back();
    kernel.id = 0;
    kernel.name = "fusion";
    kernel.type = NodeType::kComp;
    kernel.duration_micros = 17;
    kernel.num_ops = 1000;
    kernel.tensor_size = 4096;
    Node& all_reduce = trace.nodes.emplace_back();
    all_reduce.id = 1;
    all_reduce.name = "all_reduce";
    all_reduce.type = NodeType::kCollective;
    all_reduce.data_deps = {0};
    all_reduce.comm_type = CommType::kAllReduce;
    all_reduce.comm_size = 1ULL << 33;  // beyond 32 bits
    all_reduce.pg_name = "1";
    all_reduce.involved_dim = {true, false};
    Node& send = trace.nodes.emplace_back();
    send.id = 2;
    send.name = "send";
    send.type = NodeType::kSend;
    send.data_deps = {1};
    send.comm_size = 64;
    send.comm_dst = 1 - rank;
    send.comm_tag = 7;
    Node& recv = trace.nodes.emplace_back();
    recv.id = 3;
    recv.name = "recv";
    recv.type = NodeType::kRecv;
    recv.data_deps = {1, 2};
    recv.comm_size = 64;
    recv.comm_src = 1 - rank;
    recv.comm_tag = send.comm_tag;
    Node& host = trace.nodes.emplace_back();
    host.id = 4;
    host.name = "host";
    host.type = NodeType::kComp;
    host.is_cpu_op = true;
    ASSERT_TRUE(write_trace(file(static_cast<int>(rank)), trace));

    auto read = read_trace(file(static_cast<int>(rank)));
    ASSERT_TRUE(read) << read.error().render();
    ASSERT_EQ(read->nodes.size(), trace.nodes.size());
    for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
      const Node& want = trace.nodes[i];
      const Node& got = read->nodes[i];
      SCOPED_TRACE(want.name);
      EXPECT_EQ(got.id, want.id);
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.type, want.type);
      EXPECT_EQ(got.data_deps, want.data_deps);
      EXPECT_EQ(got.duration_micros, want.duration_micros);
      EXPECT_EQ(got.is_cpu_op, want.is_cpu_op);
      EXPECT_EQ(got.comm_type, want.comm_type);
      EXPECT_EQ(got.comm_size, want.comm_size);
      EXPECT_EQ(got.comm_src, want.comm_src);
      EXPECT_EQ(got.comm_dst, want.comm_dst);
      EXPECT_EQ(got.comm_tag, want.comm_tag);
      EXPECT_EQ(got.pg_name, want.pg_name);
      EXPECT_EQ(got.involved_dim, want.involved_dim);
      EXPECT_EQ(got.num_ops, want.num_ops);
      EXPECT_EQ(got.tensor_size, want.tensor_size);
    }
  }
  ASSERT_TRUE(write_comm_groups((dir_ / "groups.json").string(), {{"1", {0, 1}}}));
  WorkloadOptions options;
  options.prefix = prefix();
  options.comm_groups = (dir_ / "groups.json").string();
  options.dimensions = {2, 1};
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  ASSERT_EQ(loaded->programs.size(), 1U);  // both ranks share the graph
  EXPECT_EQ(loaded->programs[0].ranks, (std::vector<std::uint32_t>{0, 1}));

  EXPECT_EQ(write_trace((dir_ / "absent" / "t.0.et").string(), Trace{}).error().code, ErrorCode::kIo);

  // The attributes are written in the widths ASTRA-sim's feeder reads.
  std::ifstream in(file(0), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  std::map<std::string, pb::AttributeProto::ValueCase> widths;
  for (int message = 0;; ++message) {
    std::uint64_t length = 0;
    if (!coded.ReadVarint64(&length)) {
      break;
    }
    const auto limit = coded.PushLimit(static_cast<int>(length));
    if (message == 0) {
      pb::GlobalMetadata metadata;
      ASSERT_TRUE(metadata.ParseFromCodedStream(&coded));
    } else {
      pb::Node node;
      ASSERT_TRUE(node.ParseFromCodedStream(&coded));
      for (const pb::AttributeProto& a : node.attr()) {
        widths[a.name()] = a.value_case();
      }
    }
    coded.PopLimit(limit);
  }
  using V = pb::AttributeProto::ValueCase;
  EXPECT_EQ(widths.at("is_cpu_op"), V::kBoolVal);
  EXPECT_EQ(widths.at("num_ops"), V::kInt64Val);
  EXPECT_EQ(widths.at("tensor_size"), V::kUint64Val);
  EXPECT_EQ(widths.at("comm_type"), V::kInt64Val);
  EXPECT_EQ(widths.at("comm_size"), V::kInt64Val);
  EXPECT_EQ(widths.at("comm_src"), V::kInt32Val);
  EXPECT_EQ(widths.at("comm_dst"), V::kInt32Val);
  EXPECT_EQ(widths.at("comm_tag"), V::kInt32Val);
  EXPECT_EQ(widths.at("pg_name"), V::kStringVal);
  EXPECT_EQ(widths.at("involved_dim"), V::kBoolList);

  Trace wide;
  Node& send = wide.nodes.emplace_back();
  send.type = NodeType::kSend;
  send.comm_tag = std::int64_t{1} << 40;
  auto refused = write_trace(file(0), wide);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("does not fit the int32 ASTRA-sim reads"), std::string::npos)
      << refused.error().message;
}

TEST_F(ChakraTest, InconsistentJobsAreRefusedWithRanksAndNodes) {
  auto collective = [](TraceWriter& w, std::uint64_t id, std::int64_t size) {
    pb::Node& c = w.add(id, pb::COMM_COLL_NODE);
    attr_int64(c, "comm_type", 0);
    attr_int64(c, "comm_size", size);
  };
  {  // rank 1's all-reduce is bigger: two graphs in one collective, which becomes joint (the
     // system layer compares the sizes: tests/integration/chakra_joint.sh)
    TraceWriter a;
    collective(a, 0, 64);
    a.write(file(0));
    TraceWriter b;
    b.add(0, pb::COMP_NODE).set_duration_micros(3);
    collective(b, 1, 128);
    b.write(file(1));
    WorkloadOptions options;
    options.prefix = prefix();
    auto loaded = load_workload(options);
    ASSERT_TRUE(loaded) << loaded.error().message;
    ASSERT_EQ(loaded.value().programs.size(), 2U);
    for (std::uint32_t r = 0; r < 2; ++r) {
      const Program& program = loaded.value().programs[r];
      EXPECT_EQ(program.ranks, std::vector<std::uint32_t>{r});
      ASSERT_EQ(program.joint_groups.size(), 1U);
      const auto& [op, groups] = *program.joint_groups.begin();
      EXPECT_EQ(program.program->op(op).kind, workload::OpKind::kAllReduce);
      EXPECT_EQ(*groups, (workload::RankGroups{{0, 1}}));
      // The op's own groups hold this program's one device.
      auto local = workload::device_groups(*program.program, program.program->op(op));
      ASSERT_TRUE(local) << local.error().message;
      EXPECT_EQ(local.value(), (workload::DeviceGroups{{0}}));
    }
  }
  {  // a dependency on a node that is not there, and a cycle
    TraceWriter a;
    a.add(0, pb::COMP_NODE, {7});
    a.write(file(0));
    fs::remove(file(1));
    WorkloadOptions options;
    options.prefix = prefix();
    auto loaded = load_workload(options);
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().message.find("data dependency on node id 7, which is not in the trace"), std::string::npos)
        << loaded.error().message;
    TraceWriter c;
    c.add(0, pb::COMP_NODE, {1}).set_duration_micros(1);
    c.add(1, pb::COMP_NODE, {0}).set_duration_micros(1);
    c.write(file(0));
    auto cycle = load_workload(options);
    ASSERT_FALSE(cycle);
    EXPECT_NE(cycle.error().message.find("form a cycle"), std::string::npos) << cycle.error().message;
  }
  {  // REDUCE is not a collective Orrery runs; a send to a rank that does not exist
    TraceWriter a;
    pb::Node& c = a.add(0, pb::COMM_COLL_NODE);
    attr_int64(c, "comm_type", 1);
    attr_int64(c, "comm_size", 8);
    a.write(file(0));
    WorkloadOptions options;
    options.prefix = prefix();
    auto loaded = load_workload(options);
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().code, ErrorCode::kUnsupported);
    EXPECT_NE(loaded.error().message.find("REDUCE is not supported"), std::string::npos) << loaded.error().message;
    TraceWriter s;
    pb::Node& send = s.add(0, pb::COMM_SEND_NODE);
    attr_int64(send, "comm_size", 8);
    attr_int32(send, "comm_dst", 3);
    s.write(file(0));
    auto peer = load_workload(options);
    ASSERT_FALSE(peer);
    EXPECT_NE(peer.error().message.find("comm_dst 3 is not a rank of this 1-rank job"), std::string::npos)
        << peer.error().message;
  }
  {  // three ranks send twice on tag 0; the recvs list their sources in the other order
    for (int mirror = 1; mirror >= 0; --mirror) {
      for (int r = 0; r < 3; ++r) {
        TraceWriter w;
        auto p2p = [&](std::uint64_t id, pb::NodeType type, const char* peer_key, int peer) {
          pb::Node& n = w.add(id, type, id == 0 ? std::vector<std::uint64_t>{} : std::vector<std::uint64_t>{id - 1});
          attr_int64(n, "comm_size", 1000);
          attr_int32(n, peer_key, peer);
          attr_int32(n, "comm_tag", 0);
        };
        p2p(0, pb::COMM_SEND_NODE, "comm_dst", (r + 1) % 3);
        p2p(1, pb::COMM_SEND_NODE, "comm_dst", (r + 2) % 3);
        p2p(2, pb::COMM_RECV_NODE, "comm_src", mirror ? (r + 2) % 3 : (r + 1) % 3);
        p2p(3, pb::COMM_RECV_NODE, "comm_src", mirror ? (r + 1) % 3 : (r + 2) % 3);
        w.write(file(r));
      }
      WorkloadOptions options;
      options.prefix = prefix();
      auto loaded = load_workload(options);
      if (mirror) {
        ASSERT_TRUE(loaded) << loaded.error().render();
        continue;
      }
      ASSERT_FALSE(loaded);
      EXPECT_NE(loaded.error().message.find("rank 0's send number 1 of tag 0 goes to rank 1, whose recv number 1"),
                std::string::npos)
          << loaded.error().message;
      // Rank 1 shares rank 0's graph: its recv is named in its own file, by position.
      EXPECT_NE(loaded.error().message.find(file(1) + ": node 2 (the graph of " + file(0) + ", where it is id 2"),
                std::string::npos)
          << loaded.error().message;
    }
    fs::remove(file(1));
    fs::remove(file(2));
  }
  WorkloadOptions none;
  none.prefix = (dir_ / "absent").string();
  auto absent = load_workload(none);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, ErrorCode::kIo);
}

// Loads the job on `processes` in-process processes that read it together; each one's outcome.
std::vector<Result<Workload>> load_together(const WorkloadOptions& options, std::uint32_t processes) {
  std::vector<std::optional<Result<Workload>>> outcomes(processes);
  pdes::InProcessGroup group(processes);
  group.run([&](pdes::Communicator& communicator) {
    outcomes[communicator.rank()] = load_workload(options, &communicator);
  });
  std::vector<Result<Workload>> out;
  for (auto& outcome : outcomes) {
    out.push_back(std::move(*outcome));
  }
  return out;
}

// Everything the system layer takes from a loaded job, as text.
std::string describe_job(const Workload& job) {
  std::string text = fmt::format("{} ranks\n", job.ranks);
  for (const Program& p : job.programs) {
    text +=
        fmt::format("program {} ranks {}\n{}", p.label, fmt::join(p.ranks, ","), workload::dump(*p.program));
    for (const NodeCost& c : p.costs) {
      text += fmt::format("cost {} {} {} {}\n", static_cast<int>(c.kind), c.duration_ps, c.num_ops,
                          c.tensor_size);
    }
    for (const auto& [op, groups] : p.joint_groups) {
      text += fmt::format("joint {}: {}\n", op, groups->size());
    }
    if (p.memory) {
      text += fmt::format("memory {} {}\n", p.memory->arguments, p.memory->peak);
    }
  }
  for (const std::string& warning : job.warnings) {
    text += "warning " + warning + "\n";
  }
  return text;
}

// Processes that load a job together each read a block of the ranks' files, exchange signatures,
// peers and duration extremes, and all build the job one process builds alone: one shared graph
// (the send/recv ring), durations that differ (the slowest rank is in another process's block),
// graphs split for their peers (each split graph's durations again from its own ranks), joint
// collectives; with more processes than ranks too (some read nothing).
TEST_F(ChakraTest, ProcessesLoadingTogetherBuildTheJobOneProcessBuilds) {
  std::vector<std::string> prefixes = {
      (kData / "custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce").string(),
      (kData / "microbenchmarks/all_to_all/16npus_1MB/all_to_all").string()};
  const auto p2p = [](TraceWriter& w, std::uint64_t id, pb::NodeType type, std::int32_t peer,
                      std::vector<std::uint64_t> deps) {
    pb::Node& n = w.add(id, type, std::move(deps));
    attr_int64(n, "comm_size", 64);
    attr_int32(n, type == pb::COMM_SEND_NODE ? "comm_dst" : "comm_src", peer);
    attr_int32(n, "comm_tag", 0);
  };
  for (int rank = 0; rank < 5; ++rank) {  // a shift 0 -> 1 -> 2 -> 3 -> 4, then an all-reduce over all
    TraceWriter w;
    w.add(0, pb::COMP_NODE).set_duration_micros(10 + 3 * rank);
    if (rank > 0) {
      p2p(w, 1, pb::COMM_RECV_NODE, rank - 1, {});
    }
    if (rank < 4) {
      p2p(w, 2, pb::COMM_SEND_NODE, rank + 1, {0});
    }
    pb::Node& c = w.add(3, pb::COMM_COLL_NODE, {0});
    attr_int64(c, "comm_type", 0);
    attr_int64(c, "comm_size", 4096);
    w.write(file(rank));
  }
  prefixes.push_back(prefix());
  const fs::path differ = dir_ / "d";
  for (int rank = 0; rank < 6; ++rank) {  // one graph; rank 4's node is the slowest
    TraceWriter w;
    w.add(0, pb::COMP_NODE).set_duration_micros(rank == 4 ? 20 : 5 + rank);
    pb::Node& c = w.add(1, pb::COMM_COLL_NODE, {0});
    attr_int64(c, "comm_type", 2);
    attr_int64(c, "comm_size", 256);
    w.write(differ.string() + "." + std::to_string(rank) + ".et");
  }
  prefixes.push_back(differ.string());
  for (const std::string& job : prefixes) {
    SCOPED_TRACE(job);
    WorkloadOptions options;
    options.prefix = job;
    auto alone = load_workload(options);
    ASSERT_TRUE(alone) << alone.error().render();
    const std::string expected = describe_job(alone.value());
    for (const std::uint32_t processes : {2U, 3U, 7U}) {
      const auto together = load_together(options, processes);
      for (std::uint32_t p = 0; p < processes; ++p) {
        ASSERT_TRUE(together[p]) << processes << " processes, process " << p << ": "
                                 << together[p].error().render();
        EXPECT_EQ(describe_job(together[p].value()), expected) << processes << " processes, process " << p;
      }
    }
  }
}

// Every process returns the error of the lowest rank that has one, whichever process read it.
TEST_F(ChakraTest, ProcessesLoadingTogetherAgreeOnTheLowestRanksError) {
  for (int rank = 0; rank < 6; ++rank) {
    TraceWriter w;
    if (rank == 3) {
      w.add(0, pb::COMP_NODE, {9});  // a dependency on a node that is not there
    } else if (rank == 5) {
      pb::Node& c = w.add(0, pb::COMM_COLL_NODE);  // REDUCE, unsupported
      attr_int64(c, "comm_type", 1);
      attr_int64(c, "comm_size", 8);
    } else {
      w.add(0, pb::COMP_NODE).set_duration_micros(1);
    }
    w.write(file(rank));
  }
  WorkloadOptions options;
  options.prefix = prefix();
  const auto alone = load_workload(options);
  ASSERT_FALSE(alone);
  EXPECT_NE(alone.error().message.find(file(3)), std::string::npos) << alone.error().message;
  for (const std::uint32_t processes : {2U, 4U}) {
    const auto together = load_together(options, processes);
    for (std::uint32_t p = 0; p < processes; ++p) {
      ASSERT_FALSE(together[p]) << processes << " processes, process " << p;
      EXPECT_EQ(together[p].error().code, alone.error().code);
      EXPECT_EQ(together[p].error().render(), alone.error().render())
          << processes << " processes, process " << p;
    }
  }
  fs::remove(file(0));  // a missing first file, which every process reads (it holds the first graph)
  const auto missing = load_workload(options);
  ASSERT_FALSE(missing);
  for (const auto& outcome : load_together(options, 3)) {
    ASSERT_FALSE(outcome);
    EXPECT_EQ(outcome.error().render(), missing.error().render());
  }
}

// Tensors in PyTorch-converted traces' values strings: [tensor id, storage id, offset, elements,
// element bytes, device]; host tensors and everything that is not a tensor are skipped.
TEST(ChakraReader, DeviceTensorsAreTheCudaOnesOfAValuesString) {
  const std::vector<TensorRef> tensors = device_tensors(
      "[[[4, 5, 0, 64, 4, 'cuda:0'], [6, 7, 0, 64, 4, 'cpu']], '<Object>', 0, [1, 9, 16, 8, 2, 'cuda:1'], "
      "[2, 3], -1, [1, 2, 3, 4, 'cuda:0']]");
  ASSERT_EQ(tensors.size(), 2U);
  EXPECT_EQ(tensors[0].storage, 5U);
  EXPECT_EQ(tensors[0].extent, 256U);  // 64 elements of 4 bytes
  EXPECT_EQ(tensors[1].storage, 9U);
  EXPECT_EQ(tensors[1].extent, 48U);  // (16 + 8) elements of 2 bytes
  EXPECT_TRUE(device_tensors("").empty());
  EXPECT_TRUE(device_tensors("[[[").empty());
}

// The footprint: storage 1 (100 B) exists before the step; node 0 writes storage 2 (400 B), node
// 1 reads it and writes 3 (200 B; node 1 is storage 2's last use), node 2 reads 1 and 3 and
// writes 4 (50 B, never read). Live beyond the arguments: 400, then 400 + 200, then 200 + 50:
// peak 100 + 600. A job without device tensors has none.
TEST_F(ChakraTest, MemoryFootprintFromTheTensorsTheNodesList) {
  TraceWriter w;
  auto node = [&](std::uint64_t id, std::vector<std::uint64_t> deps, const std::string& in,
                  const std::string& out) {
    pb::Node& n = w.add(id, pb::COMP_NODE, std::move(deps));
    n.set_duration_micros(1);
    n.mutable_inputs()->set_values(in);
    n.mutable_outputs()->set_values(out);
  };
  node(0, {}, "[[1, 1, 0, 25, 4, 'cuda:0']]", "[[2, 2, 0, 100, 4, 'cuda:0']]");
  node(1, {0}, "[[2, 2, 0, 100, 4, 'cuda:0']]", "[[3, 3, 0, 50, 4, 'cuda:0']]");
  node(2, {1}, "[[3, 3, 0, 50, 4, 'cuda:0'], [1, 1, 0, 25, 4, 'cuda:0']]", "[[4, 4, 0, 25, 2, 'cuda:0']]");
  w.write(file(0));
  WorkloadOptions options;
  options.prefix = prefix();
  auto loaded = load_workload(options);
  ASSERT_TRUE(loaded) << loaded.error().render();
  ASSERT_TRUE(loaded->programs[0].memory.has_value());
  EXPECT_EQ(loaded->programs[0].memory->arguments, 100U);
  EXPECT_EQ(loaded->programs[0].memory->peak, 700U);

  options.prefix = (kData / "microbenchmarks/all_reduce/4npus_1MB/all_reduce").string();
  auto astra = load_workload(options);
  ASSERT_TRUE(astra) << astra.error().render();
  EXPECT_FALSE(astra->programs[0].memory.has_value());
}

}  // namespace
}  // namespace orrery::frontend::chakra
