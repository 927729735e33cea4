#include "trace/writer.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "util/error.h"

namespace orrery::trace {
namespace {

// Rows per chunk of a table: about 2-4 MB of rows, enough for deflate to work on and few enough
// chunks that a 32K-rank summary table is one or two.
constexpr hsize_t kChunkRows = 65536;
constexpr unsigned kDeflateLevel = 4;

// An HDF5 handle closed by its close function when it goes out of scope.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      close_ = other.close_;
      other.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (id_ >= 0 && close_ != nullptr) {
      close_(id_);
    }
    id_ = H5I_INVALID_HID;
  }
  [[nodiscard]] hid_t get() const { return id_; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// HDF5's own reason: the description of the innermost entry of its error stack.
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* entry, void* data) -> herr_t {
        if (n == 0 && entry->desc != nullptr) {
          *static_cast<std::string*>(data) = fmt::format("{} ({})", entry->desc, entry->func_name);
        }
        return 0;
      },
      &reason);
  return reason;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  const std::string reason = hdf5_reason();
  throw OrreryError(ErrorCode::kIo, fmt::format("{}: cannot write the HDF5 trace: {} failed{}{}", path, what,
                                                reason.empty() ? "" : ": ", reason));
}

hid_t check(hid_t id, const std::string& path, const char* what) {
  if (id < 0) {
    fail(path, what);
  }
  return id;
}

void check_status(herr_t status, const std::string& path, const char* what) {
  if (status < 0) {
    fail(path, what);
  }
}

hid_t native_type(ColumnType type) {
  switch (type) {
    case ColumnType::kU8: return H5T_NATIVE_UINT8;
    case ColumnType::kU32: return H5T_NATIVE_UINT32;
    case ColumnType::kU64: return H5T_NATIVE_UINT64;
    case ColumnType::kF64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_UINT8;
}

// The file's little-endian types: the file reads the same on any machine.
hid_t file_type(ColumnType type) {
  switch (type) {
    case ColumnType::kU8: return H5T_STD_U8LE;
    case ColumnType::kU32: return H5T_STD_U32LE;
    case ColumnType::kU64: return H5T_STD_U64LE;
    case ColumnType::kF64: return H5T_IEEE_F64LE;
  }
  return H5T_STD_U8LE;
}

std::size_t type_size(ColumnType type) {
  switch (type) {
    case ColumnType::kU8: return 1;
    case ColumnType::kU32: return 4;
    case ColumnType::kU64:
    case ColumnType::kF64: return 8;
  }
  return 1;
}

Handle string_type(std::size_t length, const std::string& path) {
  Handle type(check(H5Tcopy(H5T_C_S1), path, "H5Tcopy"), H5Tclose);
  check_status(H5Tset_size(type.get(), std::max<std::size_t>(length, 1)), path, "H5Tset_size");
  check_status(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), path, "H5Tset_strpad");
  return type;
}

}  // namespace

struct Writer::Handles {
  Handle file;
  Handle collective;  // the collective data-transfer property list
};

Writer::Writer(MPI_Comm comm, const std::string& path) : comm_(comm), path_(path), handles_(std::make_unique<Handles>()) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors are reported as OrreryError, not printed by HDF5
  Handle access(check(H5Pcreate(H5P_FILE_ACCESS), path_, "H5Pcreate"), H5Pclose);
  check_status(H5Pset_fapl_mpio(access.get(), comm_, MPI_INFO_NULL), path_, "H5Pset_fapl_mpio");
  const hid_t file = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
  // Agree on the outcome: a file one process cannot create fails the run on every process.
  int created = file >= 0 ? 1 : 0;
  int everywhere = 0;
  MPI_Allreduce(&created, &everywhere, 1, MPI_INT, MPI_MIN, comm_);
  if (everywhere == 0) {
    if (file >= 0) {
      H5Fclose(file);
    }
    throw OrreryError(ErrorCode::kIo, fmt::format("{}: cannot create the HDF5 trace (is the directory there and "
                                                  "writable?)",
                                                  path_));
  }
  handles_->file = Handle(file, H5Fclose);
  handles_->collective = Handle(check(H5Pcreate(H5P_DATASET_XFER), path_, "H5Pcreate"), H5Pclose);
  check_status(H5Pset_dxpl_mpio(handles_->collective.get(), H5FD_MPIO_COLLECTIVE), path_, "H5Pset_dxpl_mpio");
  attribute("complete", std::uint64_t{0});
}

Writer::~Writer() = default;

void Writer::attribute(const std::string& name, const std::string& value) {
  const Handle type = string_type(value.size() + 1, path_);
  Handle space(check(H5Screate(H5S_SCALAR), path_, "H5Screate"), H5Sclose);
  if (H5Aexists(handles_->file.get(), name.c_str()) > 0) {
    check_status(H5Adelete(handles_->file.get(), name.c_str()), path_, "H5Adelete");
  }
  Handle attribute(check(H5Acreate2(handles_->file.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT),
                         path_, "H5Acreate2"),
                   H5Aclose);
  check_status(H5Awrite(attribute.get(), type.get(), value.c_str()), path_, "H5Awrite");
}

namespace {

template <class T>
void numeric_attribute(hid_t file, const std::string& path, const std::string& name, hid_t file_type, hid_t memory_type,
                       T value) {
  Handle space(check(H5Screate(H5S_SCALAR), path, "H5Screate"), H5Sclose);
  Handle attribute;
  if (H5Aexists(file, name.c_str()) > 0) {
    attribute = Handle(check(H5Aopen(file, name.c_str(), H5P_DEFAULT), path, "H5Aopen"), H5Aclose);
  } else {
    attribute = Handle(check(H5Acreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), path,
                             "H5Acreate2"),
                       H5Aclose);
  }
  check_status(H5Awrite(attribute.get(), memory_type, &value), path, "H5Awrite");
}

}  // namespace

// Parallel HDF5 needs the same attribute value on every process: the first process's wins (a
// wall time, say, differs between processes).
void Writer::attribute(const std::string& name, std::uint64_t value) {
  MPI_Bcast(&value, 1, MPI_UINT64_T, 0, comm_);
  numeric_attribute(handles_->file.get(), path_, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, value);
}

void Writer::attribute(const std::string& name, double value) {
  MPI_Bcast(&value, 1, MPI_DOUBLE, 0, comm_);
  numeric_attribute(handles_->file.get(), path_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, value);
}

namespace {

// Every process's blocks, merged in key order: (key, rows, process).
struct PlacedBlock {
  std::uint64_t key;
  std::uint64_t rows;
  int process;
};

std::vector<PlacedBlock> gather_blocks(MPI_Comm comm, const std::vector<Block>& mine) {
  int processes = 1;
  MPI_Comm_size(comm, &processes);
  std::vector<std::uint64_t> flat;
  for (const Block& block : mine) {
    flat.push_back(block.key);
    flat.push_back(block.rows);
  }
  int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(processes));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  std::vector<int> displacements(counts.size(), 0);
  for (std::size_t p = 1; p < counts.size(); ++p) {
    displacements[p] = displacements[p - 1] + counts[p - 1];
  }
  std::vector<std::uint64_t> all(static_cast<std::size_t>(displacements.back() + counts.back()));
  MPI_Allgatherv(flat.data(), count, MPI_UINT64_T, all.data(), counts.data(), displacements.data(), MPI_UINT64_T,
                 comm);
  std::vector<PlacedBlock> blocks;
  for (int p = 0; p < processes; ++p) {
    for (int i = displacements[static_cast<std::size_t>(p)];
         i < displacements[static_cast<std::size_t>(p)] + counts[static_cast<std::size_t>(p)]; i += 2) {
      blocks.push_back(PlacedBlock{all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(i) + 1], p});
    }
  }
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const PlacedBlock& a, const PlacedBlock& b) { return a.key < b.key; });
  return blocks;
}

}  // namespace

void Writer::write_table(const TableRows& table) {
  const std::vector<PlacedBlock> blocks = gather_blocks(comm_, table.blocks);
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i].key == blocks[i - 1].key) {
      throw OrreryError(ErrorCode::kInternal, fmt::format("trace table {}: key {} is given by processes {} and {}",
                                                          table.name, blocks[i].key, blocks[i - 1].process,
                                                          blocks[i].process));
    }
  }
  int me = 0;
  MPI_Comm_rank(comm_, &me);
  hsize_t total = 0;
  std::vector<std::pair<hsize_t, hsize_t>> mine;  // (offset, rows) of this process's blocks
  for (const PlacedBlock& block : blocks) {
    if (block.process == me && block.rows > 0) {
      mine.emplace_back(total, block.rows);
    }
    total += block.rows;
  }
  hsize_t local_rows = 0;
  for (const auto& [offset, rows] : mine) {
    local_rows += rows;
  }

  // The rows as the file stores them: the fields packed, no padding. The rows are packed here,
  // not by HDF5: parallel writes of compressed datasets must be collective, and HDF5 falls back
  // to independent I/O whenever it converts a type (padding included).
  Handle memory_type;
  Handle stored_type;
  std::size_t packed = 0;
  for (const Column& column : table.columns) {
    packed += type_size(column.type);
  }
  memory_type = Handle(check(H5Tcreate(H5T_COMPOUND, packed), path_, "H5Tcreate"), H5Tclose);
  stored_type = Handle(check(H5Tcreate(H5T_COMPOUND, packed), path_, "H5Tcreate"), H5Tclose);
  std::vector<std::size_t> packed_offsets;
  std::size_t offset = 0;
  for (const Column& column : table.columns) {
    check_status(H5Tinsert(memory_type.get(), column.name.c_str(), offset, native_type(column.type)), path_,
                 "H5Tinsert");
    check_status(H5Tinsert(stored_type.get(), column.name.c_str(), offset, file_type(column.type)), path_,
                 "H5Tinsert");
    packed_offsets.push_back(offset);
    offset += type_size(column.type);
  }
  std::vector<std::byte> packed_rows(static_cast<std::size_t>(local_rows) * packed);
  const auto* source = static_cast<const std::byte*>(table.data);
  for (std::size_t row = 0; row < local_rows; ++row) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      std::memcpy(packed_rows.data() + row * packed + packed_offsets[c], source + row * table.row_size + table.columns[c].offset,
                  type_size(table.columns[c].type));
    }
  }

  const hsize_t dims[1] = {total};
  Handle file_space(check(H5Screate_simple(1, dims, nullptr), path_, "H5Screate_simple"), H5Sclose);
  Handle create(check(H5Pcreate(H5P_DATASET_CREATE), path_, "H5Pcreate"), H5Pclose);
  if (total > 0) {
    const hsize_t chunk[1] = {std::min(total, kChunkRows)};
    check_status(H5Pset_chunk(create.get(), 1, chunk), path_, "H5Pset_chunk");
    check_status(H5Pset_shuffle(create.get()), path_, "H5Pset_shuffle");
    check_status(H5Pset_deflate(create.get(), kDeflateLevel), path_, "H5Pset_deflate");
  }
  Handle dataset(check(H5Dcreate2(handles_->file.get(), table.name.c_str(), stored_type.get(), file_space.get(),
                                  H5P_DEFAULT, create.get(), H5P_DEFAULT),
                       path_, "H5Dcreate2"),
                 H5Dclose);
  if (!table.description.empty()) {
    const Handle type = string_type(table.description.size() + 1, path_);
    Handle space(check(H5Screate(H5S_SCALAR), path_, "H5Screate"), H5Sclose);
    Handle attribute(check(H5Acreate2(dataset.get(), "description", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                           path_, "H5Acreate2"),
                     H5Aclose);
    check_status(H5Awrite(attribute.get(), type.get(), table.description.c_str()), path_, "H5Awrite");
  }
  if (total == 0) {
    return;
  }
  check_status(H5Sselect_none(file_space.get()), path_, "H5Sselect_none");
  for (const auto& [start, rows] : mine) {
    const hsize_t first[1] = {start};
    const hsize_t count[1] = {rows};
    check_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_OR, first, nullptr, count, nullptr), path_,
                 "H5Sselect_hyperslab");
  }
  const hsize_t memory_dims[1] = {std::max<hsize_t>(local_rows, 1)};
  Handle memory_space(check(H5Screate_simple(1, memory_dims, nullptr), path_, "H5Screate_simple"), H5Sclose);
  if (local_rows == 0) {
    check_status(H5Sselect_none(memory_space.get()), path_, "H5Sselect_none");
  }
  check_status(H5Dwrite(dataset.get(), memory_type.get(), memory_space.get(), file_space.get(),
                        handles_->collective.get(), packed_rows.data()),
               path_, fmt::format("H5Dwrite of {}", table.name).c_str());
}

void Writer::write_strings(const std::string& name, const std::vector<std::string>& strings) {
  std::size_t longest = 1;
  for (const std::string& text : strings) {
    longest = std::max(longest, text.size() + 1);
  }
  std::vector<char> packed(strings.size() * longest, '\0');
  for (std::size_t i = 0; i < strings.size(); ++i) {
    std::copy(strings[i].begin(), strings[i].end(), packed.begin() + static_cast<std::ptrdiff_t>(i * longest));
  }
  const Handle type = string_type(longest, path_);
  const hsize_t dims[1] = {strings.size()};
  Handle file_space(check(H5Screate_simple(1, dims, nullptr), path_, "H5Screate_simple"), H5Sclose);
  Handle dataset(check(H5Dcreate2(handles_->file.get(), name.c_str(), type.get(), file_space.get(), H5P_DEFAULT,
                                  H5P_DEFAULT, H5P_DEFAULT),
                       path_, "H5Dcreate2"),
                 H5Dclose);
  if (strings.empty()) {
    return;
  }
  int me = 0;
  MPI_Comm_rank(comm_, &me);
  Handle memory_space(check(H5Screate_simple(1, dims, nullptr), path_, "H5Screate_simple"), H5Sclose);
  if (me != 0) {  // the first process writes the table (every process holds the same one)
    check_status(H5Sselect_none(file_space.get()), path_, "H5Sselect_none");
    check_status(H5Sselect_none(memory_space.get()), path_, "H5Sselect_none");
  }
  check_status(H5Dwrite(dataset.get(), type.get(), memory_space.get(), file_space.get(), handles_->collective.get(),
                        packed.data()),
               path_, "H5Dwrite of the string table");
}

void Writer::finish() {
  attribute("complete", std::uint64_t{1});
  check_status(H5Fflush(handles_->file.get(), H5F_SCOPE_GLOBAL), path_, "H5Fflush");
  handles_->collective.reset();
  handles_->file.reset();
}

}  // namespace orrery::trace
