#include "frontend/stablehlo/stablehlo.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "frontend/stablehlo/lower.h"
#include "frontend/stablehlo/parser.h"

namespace orrery::frontend::stablehlo {

using workload::SourceText;

namespace {

// MLIR bytecode starts with these four bytes ("ML\xefR").
constexpr std::string_view kBytecodeMagic("ML\xef\x52", 4);

Error io_error(const std::string& path, const std::string& what) {
  return Error{
      ErrorCode::kIo, "cannot " + what + " '" + path + "': " + std::strerror(errno), std::nullopt, {}};
}

}  // namespace

Result<std::shared_ptr<const SourceText>> read_source(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return io_error(path, "open");
  }
  auto source = std::make_shared<SourceText>();
  source->path = path;
  char chunk[1 << 16];
  std::size_t read = 0;
  while ((read = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
    source->text.append(chunk, read);
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    return io_error(path, "read");
  }
  if (source->text.substr(0, kBytecodeMagic.size()) == kBytecodeMagic) {
    return Error{ErrorCode::kUnsupported,
                 "MLIR bytecode is not supported; export text (e.g. `stablehlo-translate --deserialize " +
                     path + "`, or print the module with `str(lowered.compiler_ir('stablehlo'))` in JAX)",
                 SourceLocation{path, 0, 0, ""},
                 {}};
  }
  if (source->text.size() >= (std::size_t{1} << 32)) {
    return Error{ErrorCode::kUnsupported,
                 "files of 4 GiB or more are not supported (source offsets are 32-bit)",
                 SourceLocation{path, 0, 0, ""},
                 {}};
  }
  return std::shared_ptr<const SourceText>(std::move(source));
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> split_chunks(std::string_view text) {
  constexpr std::string_view kMarker = "// -----";
  std::vector<std::pair<std::uint32_t, std::uint32_t>> chunks;
  std::size_t begin = 0;
  std::size_t line = 0;
  while (line < text.size()) {
    const std::size_t newline = text.find('\n', line);
    const std::size_t next = newline == std::string_view::npos ? text.size() : newline + 1;
    if (text.compare(line, kMarker.size(), kMarker) == 0) {
      chunks.emplace_back(static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(line));
      begin = next;
    }
    line = next;
  }
  chunks.emplace_back(static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(text.size()));
  return chunks;
}

std::vector<ModuleOutcome> parse_modules(const std::shared_ptr<const SourceText>& source,
                                         const Options& options) {
  std::vector<ModuleOutcome> outcomes;
  std::uint32_t module_index = 0;
  for (const auto& [begin, end] : split_chunks(source->text)) {
    Diagnostics diagnostics(source->path, source->text);
    Parser parser(source, begin, end, module_index, options, diagnostics);
    std::vector<std::unique_ptr<ModuleDraft>> drafts;
    bool ok = parser.parse_chunk(drafts).ok();
    for (std::size_t i = 0; ok && i < drafts.size(); ++i) {
      ok = lower_module(*drafts[i], parser.attribute_aliases(), options, diagnostics).ok();
    }
    if (!ok) {
      outcomes.push_back(ModuleOutcome{begin, end, diagnostics.error()});
      module_index += drafts.empty() ? 1 : static_cast<std::uint32_t>(drafts.size());
      continue;
    }
    std::vector<std::string> warnings = diagnostics.take_warnings();
    for (auto& draft : drafts) {
      ParsedModule module{draft->builder.finish(), std::move(warnings)};
      warnings.clear();
      outcomes.push_back(ModuleOutcome{draft->begin, draft->end, std::move(module)});
    }
    module_index += static_cast<std::uint32_t>(drafts.size());
  }
  return outcomes;
}

Result<std::vector<ParsedModule>> parse_source(const std::shared_ptr<const SourceText>& source,
                                               const Options& options) {
  std::vector<ParsedModule> modules;
  std::set<std::string> loops;
  for (ModuleOutcome& outcome : parse_modules(source, options)) {
    if (!outcome.result.ok()) {
      return outcome.result.error();
    }
    ParsedModule& module = outcome.result.value();
    for (const workload::OpId id : module.program->while_ops()) {
      const workload::Program& p = *module.program;
      loops.insert(std::string(p.string(p.while_loop(p.op(id)).name)));
    }
    modules.push_back(std::move(module));
  }
  for (const auto& [name, count] : options.trip_counts) {
    if (loops.count(name) == 0) {
      std::string known;
      for (const std::string& loop : loops) {
        known += (known.empty() ? "" : ", ") + loop;
      }
      return Error{
          ErrorCode::kConfig,
          "trip count given for '" + name + "', but " + source->path + " has no while loop of that name",
          std::nullopt,
          {loops.empty() ? "the file has no while loops" : "its loops are: " + known}};
    }
  }
  return modules;
}

Result<std::vector<ParsedModule>> parse_file(const std::string& path, const Options& options) {
  auto source = read_source(path);
  if (!source.ok()) {
    return source.error();
  }
  return parse_source(source.value(), options);
}

}  // namespace orrery::frontend::stablehlo
