#pragma once
// The lobby's flag handling (spec §1.3): the pre-parser that moves flag words before the
// positional words, and a port of the parts of Go's `flag` package the lobby uses.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace exedev::emulator {

/// Moves every word that starts with '-' (but not "-----") before the positional words. A flag
/// word without '=' takes the next word as its value when that word does not start with '-',
/// even for bool flags. "--" ends scanning; the words after it stay positional.
std::vector<std::string> preparse_flags(const std::vector<std::string>& words);

enum class FlagKind {
  string,  ///< last one wins
  boolean, ///< `-x`, `--x`, `--x=false`; never takes the next word
  uint,    ///< decimal unsigned integer
  list,    ///< repeatable; each value may be a comma-separated list
  repeated,///< repeatable; values kept whole (for KEY=VALUE)
};

struct FlagSpec {
  std::string name;
  FlagKind kind = FlagKind::string;
  std::vector<std::string> aliases;
  std::string usage;
};

class ParsedFlags {
 public:
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string str(const std::string& name, const std::string& fallback = {}) const;
  bool boolean(const std::string& name, bool fallback = false) const;
  std::optional<unsigned long long> uint(const std::string& name) const;
  /// A list flag's values, split at commas, spaces trimmed, empty items dropped.
  std::vector<std::string> list(const std::string& name) const;
  /// Every value given for a repeated flag, in order.
  std::vector<std::string> values(const std::string& name) const;
  std::vector<std::string> positional;

 private:
  friend class FlagSet;
  std::map<std::string, std::vector<std::string>> values_;
};

class FlagSet {
 public:
  explicit FlagSet(std::vector<FlagSpec> specs) : specs_(std::move(specs)) {}
  /// Parses words already passed through preparse_flags, as Go's FlagSet.Parse does: stops at the
  /// first non-flag word or after "--". On error returns nullopt and sets `error` to Go's message
  /// (for example `flag provided but not defined: -x`).
  std::optional<ParsedFlags> parse(const std::vector<std::string>& words, std::string& error) const;

 private:
  const FlagSpec* find(const std::string& name) const;
  std::vector<FlagSpec> specs_;
};

/// Go's strconv.ParseBool.
std::optional<bool> parse_go_bool(const std::string& text);

}  // namespace exedev::emulator
