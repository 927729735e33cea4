// External estimators (docs/compute.md, "Plugins"): a shared library speaking the C ABI of
// plugin_abi.h (loaded with dlopen), or an executable speaking JSON lines on stdin/stdout.
//
// JSON-lines protocol, version 1 (one JSON object per line, UTF-8):
//   Orrery -> plugin  {"orrery":"estimator","protocol":1,"options":"..."}
//   plugin -> Orrery  {"protocol":1,"name":"my-estimator"}
//   Orrery -> plugin  {"id":1,"op":{...},"hardware":{...}}   (fields as OrreryOp / OrreryHardware)
//   plugin -> Orrery  {"id":1,"time_s":1.5e-05,"bound":"compute","note":"..."}
//                  or {"id":1,"error":"why"}
// Orrery closes the plugin's stdin at the end and waits for it to exit. Anything else -- a line
// that is not JSON, a wrong id or protocol, a missing or negative time, an exit, no answer within
// the timeout -- ends the run with an error naming the plugin, the op and the plugin's stderr.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compute/estimator.h"
#include "compute/plugin_abi.h"

namespace orrery::compute {

class SharedLibraryEstimator final : public Estimator {
 public:
  // Throws OrreryError naming the library when it cannot be loaded, lacks the entry point, was
  // built for another ABI version or fails to create its state.
  SharedLibraryEstimator(const std::filesystem::path& library, const std::string& options);
  ~SharedLibraryEstimator() override;
  SharedLibraryEstimator(const SharedLibraryEstimator&) = delete;
  SharedLibraryEstimator& operator=(const SharedLibraryEstimator&) = delete;

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware& hardware) const override;

 private:
  std::string path_;
  std::string name_;
  void* handle_ = nullptr;
  const OrreryEstimatorPlugin* plugin_ = nullptr;
  void* state_ = nullptr;
  mutable std::mutex mutex_;
};

class SubprocessEstimator final : public Estimator {
 public:
  // Starts the executable and performs the handshake; throws OrreryError when it cannot.
  SubprocessEstimator(const std::filesystem::path& executable, std::vector<std::string> args, const std::string& options,
                      std::chrono::milliseconds timeout);
  ~SubprocessEstimator() override;
  SubprocessEstimator(const SubprocessEstimator&) = delete;
  SubprocessEstimator& operator=(const SubprocessEstimator&) = delete;

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware& hardware) const override;

 private:
  void handshake(const std::string& options);
  [[noreturn]] void fail(const std::string& what) const;
  void send(const std::string& line) const;
  std::string receive(const char* waiting_for) const;
  void drain_stderr() const;
  void stop() noexcept;

  std::string path_;
  std::string name_;
  std::chrono::milliseconds timeout_;
  mutable int pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  mutable std::string buffer_;
  mutable std::string stderr_tail_;
  mutable std::uint64_t next_id_ = 1;
  mutable bool broken_ = false;
  mutable std::mutex mutex_;
};

// A plugin estimator: shared library (a path ending in .so, or transport shared_library) or
// subprocess.
std::unique_ptr<Estimator> make_plugin_estimator(const std::filesystem::path& path, config::PluginTransport transport,
                                                 const std::vector<std::string>& args, const std::string& options,
                                                 double timeout_s);

// The JSON the subprocess protocol sends (exposed for tests and plugin authors' fixtures).
nlohmann::json op_to_json(const OpSignature& op);
nlohmann::json hardware_to_json(const OpSignature& op, const Hardware& hardware);

}  // namespace orrery::compute
