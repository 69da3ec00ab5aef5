#include <exedev/workspace/types.hpp>

#include <nlohmann/json.hpp>

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

std::string shell_quote(const std::string& text) {
  if (text.empty()) return "''";
  // shlex.quote's safe set: ASCII word characters and @%+=:,./-
  bool safe = true;
  for (const unsigned char c : text) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && std::string_view("@%+=:,./-").find(static_cast<char>(c)) == std::string_view::npos) {
      safe = false;
      break;
    }
  }
  if (safe) return text;
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\"'\"'";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at bytes[i], or of the maximal invalid subpart
// (negated) as Unicode's "best practice" for U+FFFD substitution defines it, which is what
// Python's decoder implements.
long utf8_sequence(std::string_view bytes, std::size_t i) {
  const auto b = static_cast<unsigned char>(bytes[i]);
  if (b < 0x80) return 1;
  int need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return -1;
  }
  std::size_t j = i + 1;
  for (int k = 0; k < need; ++k, ++j) {
    if (j >= bytes.size()) return -static_cast<long>(j - i);
    const auto c = static_cast<unsigned char>(bytes[j]);
    if (c < lo || c > hi) return -static_cast<long>(j - i);
    lo = 0x80;
    hi = 0xBF;
  }
  return static_cast<long>(j - i);
}

}  // namespace

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const long n = utf8_sequence(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<std::size_t>(-n);
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    const long n = utf8_sequence(bytes, i);
    if (n < 0) return false;
    i += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace exedev::workspace
