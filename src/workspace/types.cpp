#include <exedev/workspace/types.hpp>

#include <nlohmann/json.hpp>

#include "common/inert_text.hpp"
#include "common/shell_quote.hpp"
#include "common/utf8.hpp"

#include <cmath>
#include <stdexcept>

namespace exedev::workspace {

std::string WorkspaceRef::to_json() const {
  // Python's json.dumps form (key order, separators, ASCII escapes), byte for byte.
  try {
    return "{\"provider\": " + nlohmann::json(provider).dump(-1, ' ', true) +
           ", \"id\": " + nlohmann::json(id).dump(-1, ' ', true) + "}";
  } catch (const nlohmann::json::type_error&) {
    // A ref that cannot be written as JSON text must not be silently altered: it would name
    // another environment when read back.
    throw std::invalid_argument("WorkspaceRef provider and id must be valid UTF-8 to serialize as JSON");
  }
}

WorkspaceRef WorkspaceRef::from_json(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("WorkspaceRef JSON is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("WorkspaceRef JSON must be an object");
  for (const auto* key : {"provider", "id"}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
      throw std::invalid_argument(std::string("WorkspaceRef JSON needs a string \"") + key + "\" member");
    }
  }
  for (const auto& item : j.items()) {
    if (item.key() != "provider" && item.key() != "id") {
      throw std::invalid_argument("WorkspaceRef JSON has an unknown member \"" + item.key() + "\"");
    }
  }
  return WorkspaceRef{j["provider"].get<std::string>(), j["id"].get<std::string>()};
}

std::string Command::to_shell_line() const {
  if (is_shell()) return line();
  std::string out;
  for (const auto& item : args()) {
    if (!out.empty()) out += ' ';
    out += shell_quote(item);
  }
  return out;
}

void validate_timeout(const std::optional<Seconds>& timeout) {
  if (!timeout) return;
  const double value = timeout->count();
  if (!std::isfinite(value) || value <= 0) {
    throw std::invalid_argument("timeout must be a positive finite number or None");
  }
}

std::string shell_quote(const std::string& text) { return exedev::detail::sh_quote_if_needed(text); }

std::string utf8_replace_invalid(std::string_view bytes) { return exedev::detail::utf8_replace_invalid(bytes); }

std::string printable_text(std::string_view bytes) {
  std::string text;
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    std::string_view line = bytes.substr(0, newline);
    if (newline != std::string_view::npos && line.ends_with('\r')) line.remove_suffix(1);
    text += exedev::detail::inert_text(line, std::string_view::npos);
    if (newline == std::string_view::npos) break;
    text += '\n';
    bytes.remove_prefix(newline + 1);
  }
  return text;
}

bool is_valid_utf8(std::string_view bytes) { return exedev::detail::is_valid_utf8(bytes); }

}  // namespace exedev::workspace
