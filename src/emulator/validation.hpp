#pragma once
// Validation rules of exe.dev's lobby (spec §3): VM names, tags, comments, sizes, durations.
// Each function returns the 422 error message, or nullopt when the input is valid.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::emulator {

/// 5-52 characters of `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`, not a reserved name.
std::optional<std::string> validate_vm_name(std::string_view name);
/// `^[a-z][a-z0-9_-]*$`.
bool is_valid_tag(std::string_view tag);
std::optional<std::string> validate_tag(std::string_view tag);
/// The comment rules of §3.8, applied to the trimmed text.
std::optional<std::string> validate_comment(std::string_view comment);
/// `N` (GiB) or N with a unit B|K|KB|KIB|M|MB|MIB|G|GB|GIB|T|TB|TIB (case-insensitive, powers of
/// 1024, decimals allowed). nullopt = not a size.
std::optional<std::uint64_t> parse_size(std::string_view text);
/// `--exp`: <N>h|d|w|m|y (m = 30 days, y = 365 days). nullopt duration for "never".
struct ExpiryParse {
  bool ok = false;
  std::optional<std::chrono::seconds> duration;
};
ExpiryParse parse_expiry(std::string_view text);

}  // namespace exedev::emulator
