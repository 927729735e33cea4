// The run trace (DESIGN.md "Trace", docs/trace.md): one HDF5 file per run, written by every
// process of the run's communicator with parallel HDF5 (MPI-IO).
//
// A table is a one-dimensional dataset of compound rows. Each process hands the writer the rows
// it owns as blocks, one per key (a rank, say), the blocks in increasing key order; a key belongs
// to one process. The writer places the blocks of all processes in increasing key order, so a
// table's content depends only on the rows and their keys, never on how keys were spread over
// processes: the same run gives bit-identical datasets for any process count. Every process calls
// every function of the writer, in the same order (HDF5's collective calls).
//
// The file carries the root attribute `complete` = 0 from the moment it is created; finish() sets
// it to 1 after the last table. A file whose run failed, or was killed, reads as incomplete.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace orrery::trace {

inline constexpr std::uint32_t kSchemaVersion = 1;

enum class ColumnType : std::uint8_t { kU8, kU32, kU64, kF64 };

struct Column {
  std::string name;
  ColumnType type;
  std::size_t offset;  // within the row struct
};

struct Block {
  std::uint64_t key = 0;
  std::uint64_t rows = 0;
};

struct TableRows {
  std::string name;             // the dataset's path, e.g. "ops"
  std::vector<Column> columns;  // every field of the row struct, in order
  std::size_t row_size = 0;     // sizeof the row struct
  const void* data = nullptr;   // this process's rows: its blocks one after the other
  std::vector<Block> blocks;    // this process's blocks, keys increasing
  std::string description;      // the dataset's `description` attribute
};

// Builds a TableRows from a vector of row structs (one block per key, in order).
template <class Row>
TableRows table_of(std::string name, std::vector<Column> columns, const std::vector<Row>& rows,
                   std::vector<Block> blocks, std::string description) {
  return TableRows{std::move(name), std::move(columns), sizeof(Row), rows.data(), std::move(blocks),
                   std::move(description)};
}

class Writer {
 public:
  // Creates (truncates) `path` on every process of `comm`. Throws OrreryError (kIo) naming the
  // path when the file cannot be created; the error is raised on every process.
  Writer(MPI_Comm comm, const std::string& path);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Root attributes. Every process calls them; numbers are taken from the first process, strings
  // must be the same on every process.
  void attribute(const std::string& name, const std::string& value);
  void attribute(const std::string& name, std::uint64_t value);
  void attribute(const std::string& name, double value);

  // A table of compound rows (see the header comment). Throws if a key is given by two processes.
  void write_table(const TableRows& table);

  // The string table: `strings` (same on every process) as fixed-length strings; tables refer to
  // them by index.
  void write_strings(const std::string& name, const std::vector<std::string>& strings);

  // Marks the file complete and closes it.
  void finish();

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  struct Handles;
  MPI_Comm comm_;
  std::string path_;
  std::unique_ptr<Handles> handles_;
};

}  // namespace orrery::trace
