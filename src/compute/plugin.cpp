#include "compute/plugin.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/error.h"

extern char** environ;  // NOLINT(readability-identifier-naming): POSIX

namespace orrery::compute {
namespace {

using Json = nlohmann::json;
constexpr std::size_t kStderrTail = 2000;

std::string plugin_error(const std::string& plugin, const std::string& what) {
  return fmt::format("estimator plugin {}: {}", plugin, what);
}

void copy_array(std::uint64_t (&to)[3], const std::array<std::uint64_t, 3>& from) {
  std::copy(from.begin(), from.end(), to);
}

OrreryOp to_abi(const OpSignature& op) {
  OrreryOp out{};
  out.struct_size = sizeof(OrreryOp);
  out.kind = op.kind.c_str();
  out.op_class = name(op.op_class).data();
  out.element_type = name(op.element_type).data();
  out.element_bits = info(op.element_type).bits;
  out.gemm_batch = op.gemm.batch;
  out.gemm_m = op.gemm.m;
  out.gemm_n = op.gemm.n;
  out.gemm_k = op.gemm.k;
  out.conv_spatial_rank = op.conv.spatial_rank;
  out.conv_batch = op.conv.batch;
  out.conv_input_features = op.conv.input_features;
  out.conv_output_features = op.conv.output_features;
  out.conv_feature_groups = op.conv.feature_groups;
  out.conv_batch_groups = op.conv.batch_groups;
  copy_array(out.conv_input_size, op.conv.input_size);
  copy_array(out.conv_kernel_size, op.conv.kernel_size);
  copy_array(out.conv_output_size, op.conv.output_size);
  copy_array(out.conv_stride, op.conv.stride);
  copy_array(out.conv_padding_low, op.conv.padding_low);
  copy_array(out.conv_padding_high, op.conv.padding_high);
  copy_array(out.conv_input_dilation, op.conv.input_dilation);
  copy_array(out.conv_kernel_dilation, op.conv.kernel_dilation);
  out.elements = op.elements;
  out.row_length = op.row_length;
  out.flops = op.flops.value;
  out.bytes_read = op.bytes_read.count;
  out.bytes_written = op.bytes_written.count;
  return out;
}

OrreryHardware to_abi(const OpSignature& op, const Hardware& hardware) {
  OrreryHardware out{};
  out.struct_size = sizeof(OrreryHardware);
  out.name = hardware.name.c_str();
  out.peak_flops = hardware.roofline.peak_for(op).value;
  out.memory_bandwidth = hardware.roofline.memory_bandwidth.value;
  out.launch_overhead_s = hardware.roofline.launch_overhead.seconds();
  if (hardware.systolic) {
    out.has_systolic = 1;
    out.array_rows = hardware.systolic->rows;
    out.array_cols = hardware.systolic->cols;
    out.arrays = hardware.systolic->arrays;
    out.clock_hz = hardware.systolic->clock_hz;
  }
  return out;
}

// Checks a plugin's answer and turns it into an Estimate.
Estimate make_estimate(const std::string& plugin, const OpSignature& op, double time_s, const std::string& bound,
                       std::string note) {
  if (!std::isfinite(time_s) || time_s < 0.0) {
    throw OrreryError(ErrorCode::kModel,
                      plugin_error(plugin, fmt::format("returned an invalid time {} s for {} (a time must be finite "
                                                       "and non-negative)",
                                                       time_s, op.describe())));
  }
  Estimate estimate;
  estimate.time = SimTime::from_seconds(time_s);
  estimate.flops = op.flops;
  estimate.bytes = op.bytes();
  estimate.estimator = "plugin:" + plugin;
  if (bound.empty()) {
    estimate.bound = Bound::kExternal;
  } else if (const auto parsed = parse_bound(bound)) {
    estimate.bound = *parsed;
  } else {
    throw OrreryError(ErrorCode::kModel,
                      plugin_error(plugin, fmt::format("returned an unknown bound '{}' for {} (known: compute, "
                                                       "memory, overhead, or empty)",
                                                       bound, op.describe())));
  }
  estimate.note = std::move(note);
  return estimate;
}

// Writes all of `data`, with SIGPIPE held back so a dead reader gives EPIPE instead of a signal.
bool write_all(int fd, const std::string& data) {
  sigset_t pipe_set;
  sigset_t previous;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &previous);
  std::size_t written = 0;
  bool ok = true;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ok = false;
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  if (!ok) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return ok;
}

// Waits up to `timeout_ms` (-1: for ever) for the child to exit; returns its status and sets
// pid to -1 once reaped.
std::optional<int> reap(int& pid, int timeout_ms) {
  if (pid <= 0) {
    return std::nullopt;
  }
  int status = 0;
  if (timeout_ms < 0) {
    if (::waitpid(pid, &status, 0) == pid) {
      pid = -1;
      return status;
    }
    return std::nullopt;
  }
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {}", WTERMSIG(status));
  }
  return "stopped";
}

}  // namespace

// --- shared library ----------------------------------------------------------------------------

SharedLibraryEstimator::SharedLibraryEstimator(const std::filesystem::path& library, const std::string& options)
    : path_(library.string()) {
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    throw OrreryError(ErrorCode::kConfig, plugin_error(path_, fmt::format("cannot load: {}", why ? why : "unknown")));
  }
  void* symbol = ::dlsym(handle_, ORRERY_ESTIMATOR_PLUGIN_SYMBOL);
  if (symbol == nullptr) {
    ::dlclose(handle_);
    throw OrreryError(ErrorCode::kConfig, plugin_error(path_, fmt::format("does not export {}() (see plugin_abi.h)",
                                                                          ORRERY_ESTIMATOR_PLUGIN_SYMBOL)));
  }
  OrreryEstimatorPluginEntry entry = nullptr;
  static_assert(sizeof(entry) == sizeof(symbol));
  std::memcpy(&entry, &symbol, sizeof(entry));  // POSIX guarantees object/function pointer interchange
  plugin_ = entry();
  if (plugin_ == nullptr || plugin_->abi_version != ORRERY_ESTIMATOR_ABI_VERSION) {
    const unsigned version = plugin_ == nullptr ? 0U : plugin_->abi_version;
    ::dlclose(handle_);
    throw OrreryError(ErrorCode::kConfig,
                      plugin_error(path_, fmt::format("was built for estimator ABI version {}; this Orrery speaks "
                                                      "version {}",
                                                      version, ORRERY_ESTIMATOR_ABI_VERSION)));
  }
  if (plugin_->create == nullptr || plugin_->estimate == nullptr || plugin_->destroy == nullptr) {
    ::dlclose(handle_);
    throw OrreryError(ErrorCode::kConfig, plugin_error(path_, "its function table has a null entry"));
  }
  name_ = plugin_->name != nullptr && *plugin_->name != '\0' ? plugin_->name : library.stem().string();
  char error[512] = {};
  state_ = plugin_->create(options.c_str(), error, sizeof(error));
  if (state_ == nullptr) {
    ::dlclose(handle_);
    error[sizeof(error) - 1] = '\0';
    throw OrreryError(ErrorCode::kConfig, plugin_error(path_, fmt::format("create() failed: {}", error)));
  }
}

SharedLibraryEstimator::~SharedLibraryEstimator() {
  if (plugin_ != nullptr && state_ != nullptr) {
    plugin_->destroy(state_);
  }
  if (handle_ != nullptr) {
    ::dlclose(handle_);
  }
}

Estimate SharedLibraryEstimator::estimate(const OpSignature& op, const Hardware& hardware) const {
  const OrreryOp abi_op = to_abi(op);
  const OrreryHardware abi_hardware = to_abi(op, hardware);
  OrreryEstimate result{};
  char error[512] = {};
  int status = 0;
  {
    const std::lock_guard lock(mutex_);
    status = plugin_->estimate(state_, &abi_op, &abi_hardware, &result, error, sizeof(error));
  }
  error[sizeof(error) - 1] = '\0';
  result.bound[sizeof(result.bound) - 1] = '\0';
  result.note[sizeof(result.note) - 1] = '\0';
  if (status != 0) {
    throw OrreryError(ErrorCode::kModel,
                      plugin_error(name_, fmt::format("failed on {} (status {}): {}", op.describe(), status, error)));
  }
  return make_estimate(name_, op, result.time_s, result.bound, result.note);
}

// --- subprocess --------------------------------------------------------------------------------

SubprocessEstimator::SubprocessEstimator(const std::filesystem::path& executable, std::vector<std::string> args,
                                         const std::string& options, std::chrono::milliseconds timeout)
    : path_(executable.string()), name_(executable.filename().string()), timeout_(timeout) {
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    throw OrreryError(ErrorCode::kIo, plugin_error(path_, fmt::format("cannot create pipes: {}", std::strerror(errno))));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> argv_storage{path_};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, path_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  stdin_fd_ = in_pipe[1];
  stdout_fd_ = out_pipe[0];
  stderr_fd_ = err_pipe[0];
  if (spawned != 0) {
    stop();
    throw OrreryError(ErrorCode::kIo, plugin_error(path_, fmt::format("cannot start: {}", std::strerror(spawned))));
  }
  pid_ = pid;

  try {
    handshake(options);
  } catch (...) {
    stop();  // the destructor does not run when the constructor throws
    throw;
  }
}

void SubprocessEstimator::handshake(const std::string& options) {
  send(Json{{"orrery", "estimator"}, {"protocol", 1}, {"options", options}}.dump());
  const std::string line = receive("the handshake");
  Json hello;
  try {
    hello = Json::parse(line);
  } catch (const Json::exception&) {
    fail(fmt::format("answered the handshake with a line that is not JSON: {}", line));
  }
  if (!hello.is_object() || hello.value("protocol", 0) != 1) {
    fail(fmt::format("answered the handshake without \"protocol\": 1 (got {})", line));
  }
  if (const auto it = hello.find("name"); it != hello.end() && it->is_string() && !it->get<std::string>().empty()) {
    name_ = it->get<std::string>();
  }
}

SubprocessEstimator::~SubprocessEstimator() { stop(); }

void SubprocessEstimator::stop() noexcept {
  if (stdin_fd_ >= 0) {
    ::close(stdin_fd_);
    stdin_fd_ = -1;
  }
  if (pid_ > 0 && !reap(pid_, 1000)) {  // up to one second to exit on its own
    ::kill(pid_, SIGKILL);
    reap(pid_, -1);
  }
  for (int* fd : {&stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  }
}

void SubprocessEstimator::drain_stderr() const {
  if (stderr_fd_ < 0) {
    return;
  }
  pollfd poll_fd{stderr_fd_, POLLIN, 0};
  char chunk[4096];
  while (::poll(&poll_fd, 1, 0) > 0 && (poll_fd.revents & (POLLIN | POLLHUP)) != 0) {
    const ssize_t n = ::read(stderr_fd_, chunk, sizeof(chunk));
    if (n <= 0) {
      break;
    }
    stderr_tail_.append(chunk, static_cast<std::size_t>(n));
  }
  if (stderr_tail_.size() > kStderrTail) {
    stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
  }
}

void SubprocessEstimator::fail(const std::string& what) const {
  broken_ = true;
  drain_stderr();
  Error error{ErrorCode::kModel, plugin_error(name_, what), std::nullopt, {}};
  error.notes.push_back(fmt::format("plugin command: {}", path_));
  if (!stderr_tail_.empty()) {
    error.notes.push_back(fmt::format("plugin stderr: {}", stderr_tail_));
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
  }
  throw OrreryError(std::move(error));
}

void SubprocessEstimator::send(const std::string& line) const {
  if (write_all(stdin_fd_, line + "\n")) {
    return;
  }
  const std::optional<int> status = reap(pid_, 500);
  fail(fmt::format("{} before reading a request", status ? describe_status(*status) : "closed its input"));
}

std::string SubprocessEstimator::receive(const char* waiting_for) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      fail(fmt::format("no answer to {} within {} ms", waiting_for, timeout_.count()));
    }
    pollfd fds[2] = {{stdout_fd_, POLLIN, 0}, {stderr_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      fail(fmt::format("poll failed: {}", std::strerror(errno)));
    }
    if (ready <= 0) {
      continue;
    }
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      drain_stderr();
    }
    if ((fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      char chunk[4096];
      const ssize_t n = ::read(stdout_fd_, chunk, sizeof(chunk));
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      const std::optional<int> status = reap(pid_, 500);
      fail(fmt::format("{} while Orrery waited for {}", status ? describe_status(*status) : "closed its output",
                       waiting_for));
    }
  }
}

Estimate SubprocessEstimator::estimate(const OpSignature& op, const Hardware& hardware) const {
  const std::lock_guard lock(mutex_);
  if (broken_) {
    throw OrreryError(ErrorCode::kModel, plugin_error(name_, "failed earlier and was stopped"));
  }
  const std::uint64_t id = next_id_++;
  send(Json{{"id", id}, {"op", op_to_json(op)}, {"hardware", hardware_to_json(op, hardware)}}.dump());
  const std::string what = fmt::format("request {} ({})", id, op.describe());
  const std::string line = receive(what.c_str());
  Json answer;
  try {
    answer = Json::parse(line);
  } catch (const Json::exception&) {
    fail(fmt::format("answered {} with a line that is not JSON: {}", what, line));
  }
  if (!answer.is_object() || !answer.contains("id") || answer["id"] != id) {
    fail(fmt::format("answered {} with the wrong id: {}", what, line));
  }
  if (const auto error = answer.find("error"); error != answer.end()) {
    throw OrreryError(ErrorCode::kModel, plugin_error(name_, fmt::format("failed on {}: {}", op.describe(),
                                                                         error->is_string() ? error->get<std::string>() : error->dump())));
  }
  const auto time = answer.find("time_s");
  if (time == answer.end() || !time->is_number()) {
    fail(fmt::format("answered {} without a numeric time_s: {}", what, line));
  }
  const std::string bound = answer.contains("bound") && answer["bound"].is_string() ? answer["bound"].get<std::string>() : "";
  const std::string note = answer.contains("note") && answer["note"].is_string() ? answer["note"].get<std::string>() : "";
  return make_estimate(name_, op, time->get<double>(), bound, note);
}

Json op_to_json(const OpSignature& op) {
  Json json{{"kind", op.kind},
            {"op_class", name(op.op_class)},
            {"element_type", name(op.element_type)},
            {"element_bits", info(op.element_type).bits},
            {"flops", op.flops.value},
            {"bytes_read", op.bytes_read.count},
            {"bytes_written", op.bytes_written.count},
            {"elements", op.elements},
            {"row_length", op.row_length}};
  if (op.op_class == OpClass::kGemm) {
    json["gemm"] = Json{{"batch", op.gemm.batch}, {"m", op.gemm.m}, {"n", op.gemm.n}, {"k", op.gemm.k}};
  }
  if (op.op_class == OpClass::kConvolution) {
    const ConvShape& c = op.conv;
    json["conv"] = Json{{"spatial_rank", c.spatial_rank},      {"batch", c.batch},
                        {"input_features", c.input_features},  {"output_features", c.output_features},
                        {"feature_groups", c.feature_groups},  {"batch_groups", c.batch_groups},
                        {"input_size", c.input_size},          {"kernel_size", c.kernel_size},
                        {"output_size", c.output_size},        {"stride", c.stride},
                        {"padding_low", c.padding_low},        {"padding_high", c.padding_high},
                        {"input_dilation", c.input_dilation},  {"kernel_dilation", c.kernel_dilation}};
  }
  return json;
}

Json hardware_to_json(const OpSignature& op, const Hardware& hardware) {
  Json json{{"name", hardware.name},
            {"peak_flops", hardware.roofline.peak_for(op).value},
            {"memory_bandwidth", hardware.roofline.memory_bandwidth.value},
            {"launch_overhead_s", hardware.roofline.launch_overhead.seconds()}};
  if (hardware.systolic) {
    json["systolic"] = Json{{"array_rows", hardware.systolic->rows},
                            {"array_cols", hardware.systolic->cols},
                            {"arrays", hardware.systolic->arrays},
                            {"clock_hz", hardware.systolic->clock_hz}};
  }
  return json;
}

std::unique_ptr<Estimator> make_plugin_estimator(const std::filesystem::path& path, config::PluginTransport transport,
                                                 const std::vector<std::string>& args, const std::string& options,
                                                 double timeout_s) {
  const bool library = transport == config::PluginTransport::kSharedLibrary ||
                       (transport == config::PluginTransport::kAuto && path.extension() == ".so");
  if (library) {
    return std::make_unique<SharedLibraryEstimator>(path, options);
  }
  return std::make_unique<SubprocessEstimator>(
      path, args, options, std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout_s * 1000.0))));
}

}  // namespace orrery::compute
