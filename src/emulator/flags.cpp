#include "emulator/flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace exedev::emulator {
namespace {

bool starts_with_dash(const std::string& word) { return !word.empty() && word[0] == '-'; }

std::string go_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string trim_ascii(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::vector<std::string> preparse_flags(const std::vector<std::string>& words) {
  std::vector<std::string> flags;
  std::vector<std::string> positional;
  bool ended = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (ended) {
      positional.push_back(word);
    } else if (word == "--") {
      ended = true;
    } else if (starts_with_dash(word) && word.rfind("-----", 0) != 0) {
      flags.push_back(word);
      if (word.find('=') == std::string::npos && i + 1 < words.size() && !starts_with_dash(words[i + 1])) {
        flags.push_back(words[++i]);
      }
    } else {
      positional.push_back(word);
    }
  }
  // `--` goes back in only when a positional word would otherwise read as a flag (`-----BEGIN`).
  if (std::any_of(positional.begin(), positional.end(), starts_with_dash)) flags.emplace_back("--");
  flags.insert(flags.end(), positional.begin(), positional.end());
  return flags;
}

std::optional<bool> parse_go_bool(const std::string& text) {
  static const char* const truthy[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char* const falsy[] = {"0", "f", "F", "FALSE", "false", "False"};
  for (const char* t : truthy) if (text == t) return true;
  for (const char* f : falsy) if (text == f) return false;
  return std::nullopt;
}

const FlagSpec* FlagSet::find(const std::string& name) const {
  for (const FlagSpec& spec : specs_) {
    if (spec.name == name || std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end()) {
      return &spec;
    }
  }
  return nullptr;
}

std::optional<ParsedFlags> FlagSet::parse(const std::vector<std::string>& words, std::string& error) const {
  ParsedFlags parsed;
  std::size_t i = 0;
  while (i < words.size()) {
    const std::string& s = words[i];
    if (s.size() < 2 || s[0] != '-') break;
    std::size_t minuses = 1;
    if (s[1] == '-') {
      minuses = 2;
      if (s.size() == 2) {
        ++i;
        break;
      }
    }
    std::string name = s.substr(minuses);
    if (name.empty() || name[0] == '-' || name[0] == '=') {
      error = "bad flag syntax: " + s;
      return std::nullopt;
    }
    ++i;
    std::optional<std::string> value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr) {
      error = (name == "help" || name == "h") ? "flag: help requested" : "flag provided but not defined: -" + name;
      return std::nullopt;
    }
    if (spec->kind == FlagKind::boolean) {
      if (value) {
        if (!parse_go_bool(*value)) {
          error = fmt::format("invalid boolean value {} for -{}: parse error", go_quote(*value), name);
          return std::nullopt;
        }
      } else {
        value = "true";
      }
    } else if (!value) {
      if (i >= words.size()) {
        error = "flag needs an argument: -" + name;
        return std::nullopt;
      }
      value = words[i++];
    }
    if (spec->kind == FlagKind::uint) {
      unsigned long long n = 0;
      const auto* end = value->data() + value->size();
      const auto [ptr, ec] = std::from_chars(value->data(), end, n);
      if (value->empty() || ec != std::errc{} || ptr != end) {
        error = fmt::format("invalid value {} for flag -{}: parse error", go_quote(*value), name);
        return std::nullopt;
      }
    }
    auto& slot = parsed.values_[spec->name];
    if (spec->kind != FlagKind::list && spec->kind != FlagKind::repeated) slot.clear();
    slot.push_back(std::move(*value));
  }
  parsed.positional.assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  return parsed;
}

std::string ParsedFlags::str(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

bool ParsedFlags::boolean(const std::string& name, bool fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : *parse_go_bool(it->second.back());
}

std::optional<unsigned long long> ParsedFlags::uint(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return std::stoull(it->second.back());
}

std::vector<std::string> ParsedFlags::list(const std::string& name) const {
  std::vector<std::string> out;
  const auto it = values_.find(name);
  if (it == values_.end()) return out;
  for (const std::string& value : it->second) {
    std::size_t start = 0;
    while (start <= value.size()) {
      const auto comma = value.find(',', start);
      const std::string item = trim_ascii(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::vector<std::string> ParsedFlags::values(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace exedev::emulator
