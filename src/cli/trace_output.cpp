#include "cli/trace_output.h"

#include <cstddef>

#include "util/version.h"

namespace orrery::cli {
namespace {

using trace::Block;
using trace::Column;
using trace::ColumnType;

#define ORRERY_COLUMN(Row, field, type) \
  Column { #field, ColumnType::type, offsetof(Row, field) }

std::vector<Block> blocks_of(const system::TraceRecord& record, std::uint64_t system::RankBlock::*count) {
  std::vector<Block> blocks;
  for (const system::RankBlock& block : record.blocks) {
    blocks.push_back(Block{block.rank, block.*count});
  }
  return blocks;
}

// A table every process holds whole (ranks, steps, links): the first process writes it.
template <class Row>
std::vector<Block> first_process_only(const std::vector<Row>& rows, std::uint32_t process) {
  return process == 0 ? std::vector<Block>{Block{0, rows.size()}} : std::vector<Block>{};
}

}  // namespace

void begin_trace(trace::Writer& writer, const config::Scenario& scenario) {
  writer.attribute("schema", std::string("orrery-trace"));
  writer.attribute("schema_version", std::uint64_t{trace::kSchemaVersion});
  writer.attribute("orrery_version", std::string(version()));
  writer.attribute("scenario", config::scenario_to_yaml(scenario));
  writer.attribute("detail", std::string(config::enum_to_string(scenario.output.detail)));
}

void write_trace(trace::Writer& writer, const RunResult& result,
                 const system::TraceRecord& record, std::uint32_t process, std::uint32_t processes) {
  using system::CollectiveRow;
  using system::OpRow;
  using system::TraceRecord;
  using system::TransferRow;
  const system::RunSummary& summary = result.summary;
  writer.attribute("hardware", result.compute.hardware);
  writer.attribute("network_model", summary.network_model);
  writer.attribute("topology", summary.topology);
  writer.attribute("ranks", std::uint64_t{summary.ranks});
  writer.attribute("steps", std::uint64_t{summary.steps});
  writer.attribute("first_step_s", summary.first_step_s);
  writer.attribute("step_time_s", summary.step_time_s);
  // These two differ between runs of the same scenario; the tables do not.
  writer.attribute("processes", std::uint64_t{processes});
  writer.attribute("wall_s", result.wall_s);

  writer.write_strings("strings", record.strings);

  writer.write_table(trace::table_of(
      "ranks",
      {ORRERY_COLUMN(TraceRecord::Rank, program, kU32), ORRERY_COLUMN(TraceRecord::Rank, device, kU32),
       ORRERY_COLUMN(TraceRecord::Rank, endpoint, kU32), ORRERY_COLUMN(TraceRecord::Rank, node, kU32)},
      record.ranks, first_process_only(record.ranks, process),
      "one row per rank (row i is rank i): the program it runs (workload.programs index), its device id in that "
      "program, its network endpoint and its node (scale-up domain)"));
  writer.write_table(trace::table_of(
      "steps",
      {ORRERY_COLUMN(TraceRecord::Step, rank, kU32), ORRERY_COLUMN(TraceRecord::Step, step, kU32),
       ORRERY_COLUMN(TraceRecord::Step, start_ps, kU64), ORRERY_COLUMN(TraceRecord::Step, end_ps, kU64),
       ORRERY_COLUMN(TraceRecord::Step, compute_ps, kU64), ORRERY_COLUMN(TraceRecord::Step, comm_ps, kU64),
       ORRERY_COLUMN(TraceRecord::Step, exposed_comm_ps, kU64)},
      record.steps, first_process_only(record.steps, process),
      "one row per rank and training step: its start and end, and its compute, communication and exposed "
      "communication time (picoseconds of simulated time)"));
  writer.write_table(trace::table_of(
      "links",
      {ORRERY_COLUMN(TraceRecord::Link, link, kU32), ORRERY_COLUMN(TraceRecord::Link, from, kU32),
       ORRERY_COLUMN(TraceRecord::Link, to, kU32), ORRERY_COLUMN(TraceRecord::Link, kind, kU32),
       ORRERY_COLUMN(TraceRecord::Link, bandwidth_Bps, kF64), ORRERY_COLUMN(TraceRecord::Link, latency_ps, kU64),
       ORRERY_COLUMN(TraceRecord::Link, bytes, kU64)},
      record.links, first_process_only(record.links, process),
      "one row per directed network link: its ends (topology vertex ids), kind (strings), rate and latency, and "
      "the bytes of the transfers delivered over it (detail transfers; 0 below)"));
  if (record.detail >= config::TraceDetail::kCollectives) {
    writer.write_table(trace::table_of(
        "collectives",
        {ORRERY_COLUMN(CollectiveRow, rank, kU32), ORRERY_COLUMN(CollectiveRow, step, kU32),
         ORRERY_COLUMN(CollectiveRow, name, kU32), ORRERY_COLUMN(CollectiveRow, kind, kU32),
         ORRERY_COLUMN(CollectiveRow, algorithm, kU32), ORRERY_COLUMN(CollectiveRow, members, kU32),
         ORRERY_COLUMN(CollectiveRow, combined, kU32), ORRERY_COLUMN(CollectiveRow, bytes, kU64),
         ORRERY_COLUMN(CollectiveRow, issued_ps, kU64), ORRERY_COLUMN(CollectiveRow, end_ps, kU64)},
        record.collectives, blocks_of(record, &system::RankBlock::collectives),
        "one row per collective, send and recv each rank took part in, by rank, in the order they completed: "
        "name, kind and algorithm are indices into strings"));
  }
  if (record.detail >= config::TraceDetail::kOps) {
    writer.write_table(trace::table_of(
        "ops",
        {ORRERY_COLUMN(OpRow, rank, kU32), ORRERY_COLUMN(OpRow, step, kU32), ORRERY_COLUMN(OpRow, name, kU32),
         ORRERY_COLUMN(OpRow, label, kU32), ORRERY_COLUMN(OpRow, start_ps, kU64), ORRERY_COLUMN(OpRow, end_ps, kU64)},
        record.ops, blocks_of(record, &system::RankBlock::ops),
        "one row per compute kernel run, by rank, in the order they ran: name (the op's source location and kind) "
        "and label (the kernel) are indices into strings"));
  }
  if (record.detail >= config::TraceDetail::kTransfers) {
    writer.write_table(trace::table_of(
        "transfers",
        {ORRERY_COLUMN(TransferRow, destination, kU32), ORRERY_COLUMN(TransferRow, source, kU32),
         ORRERY_COLUMN(TransferRow, step, kU32), ORRERY_COLUMN(TransferRow, kind, kU32),
         ORRERY_COLUMN(TransferRow, bytes, kU64), ORRERY_COLUMN(TransferRow, sent_ps, kU64),
         ORRERY_COLUMN(TransferRow, delivered_ps, kU64)},
        record.transfers, blocks_of(record, &system::RankBlock::transfers),
        "one row per network transfer, by receiving rank, in the order they were delivered: kind (strings) is the "
        "collective's kind, or send for a send/recv pair"));
  }
  writer.finish();
}

#undef ORRERY_COLUMN

}  // namespace orrery::cli
