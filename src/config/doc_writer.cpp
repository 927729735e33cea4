#include "config/doc_writer.h"

namespace orrery::config {

std::string DocWriter::markdown_table() const {
  std::string out = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const Row& row : rows_) {
    std::string doc = row.doc;
    for (std::size_t pos = 0; (pos = doc.find('|', pos)) != std::string::npos; pos += 2) {
      doc.replace(pos, 1, "\\|");
    }
    out += fmt::format("| `{}` | {} | {} | {} |\n", row.key, row.type,
                       row.default_value.empty() ? "" : "`" + row.default_value + "`", doc);
  }
  return out;
}

}  // namespace orrery::config
