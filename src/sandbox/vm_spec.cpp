#include <exedev/sandbox/vm_spec.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>
#include <string>

#include "common/utf8.hpp"

namespace exedev {
namespace {

[[noreturn]] void invalid(std::string_view what, const std::string& why) {
  throw std::invalid_argument(std::string(what) + ": " + why);
}

bool is_lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `prefix<N>` exactly, N being digits.
bool is_prefix_number(std::string_view s, std::string_view prefix) {
  return s.size() > prefix.size() && s.substr(0, prefix.size()) == prefix && is_digits(s.substr(prefix.size()));
}

bool is_reserved_name(std::string_view name) {
  if (is_prefix_number(name, "p") || is_prefix_number(name, "port") || is_prefix_number(name, "na")) return true;
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos) return false;
  const auto last = name.substr(dash + 1);
  return is_prefix_number(last, "p") || is_prefix_number(last, "port");
}

// Go's unicode.IsSpace: what exe.dev's TrimSpace removes.
bool is_unicode_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_bidi_or_zero_width(char32_t c) {
  return (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0x2060 ||
         c == 0xFEFF || c == 0x061C;
}

bool has_space_or_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7F;
  });
}

void validate_plain_word(std::string_view value, std::string_view what) {
  if (value.empty()) invalid(what, "must not be empty");
  if (has_space_or_control(value)) invalid(what, "must not contain whitespace or control characters");
}

}  // namespace

std::string_view to_string(Egress egress) {
  switch (egress) {
    case Egress::all:
      return "all";
    case Egress::integrations:
      return "integrations";
  }
  throw std::invalid_argument("unknown Egress value");
}

void validate_vm_name(std::string_view name, std::string_view what) {
  const std::string shown = "\"" + std::string(name.substr(0, 60)) + (name.size() > 60 ? "...\"" : "\"");
  if (name.size() < 5 || name.size() > 52) invalid(what, shown + " must be 5-52 characters");
  if (!(name[0] >= 'a' && name[0] <= 'z')) invalid(what, shown + " must start with a lowercase letter");
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '-') {
      if (i + 1 == name.size() || name[i + 1] == '-') {
        invalid(what, shown + " must not end with '-' or contain '--'");
      }
    } else if (!is_lower_or_digit(c)) {
      invalid(what, shown + " may contain only lowercase letters, digits and single '-'");
    }
  }
  if (is_reserved_name(name)) invalid(what, shown + " is reserved by exe.dev (p<N>, port<N>, na<N>, or ending -p<N>/-port<N>)");
}

void validate_tag(std::string_view tag, std::string_view what) {
  const std::string shown = "\"" + std::string(tag.substr(0, 60)) + "\"";
  if (tag.empty()) invalid(what, "must not be empty");
  if (!(tag[0] >= 'a' && tag[0] <= 'z')) invalid(what, shown + " must start with a lowercase letter");
  for (const char c : tag) {
    if (!is_lower_or_digit(c) && c != '_' && c != '-') {
      invalid(what, shown + " may contain only lowercase letters, digits, '_' and '-'");
    }
  }
}

void validate_comment(std::string_view comment) {
  constexpr std::string_view what = "comment";
  const auto points = detail::utf8_code_points(comment);
  if (!points) invalid(what, "must be valid UTF-8");
  if (points->empty()) invalid(what, "must not be empty (leave it unset for no comment)");
  if (is_unicode_space(points->front()) || is_unicode_space(points->back())) {
    invalid(what, "must not start or end with whitespace (exe.dev would trim it)");
  }
  if (comment.size() > 200) invalid(what, "must be at most 200 bytes (it has " + std::to_string(comment.size()) + ")");
  for (const char32_t c : *points) {
    if (c == '\t' || c == '\r' || c == '\n') invalid(what, "must be one line, without tabs");
    if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F)) invalid(what, "must not contain control characters");
    if (is_bidi_or_zero_width(c)) invalid(what, "must not contain bidirectional or zero-width characters");
    if (c == '<' || c == '>' || c == '&' || c == '"' || c == '\'' || c == '`') {
      invalid(what, "must not contain any of < > & \" ' `");
    }
  }
}

void validate_size(std::string_view size, std::string_view what) {
  const std::string shown = "\"" + std::string(size.substr(0, 40)) + "\"";
  std::size_t i = 0;
  while (i < size.size() && size[i] >= '0' && size[i] <= '9') ++i;
  const std::size_t int_digits = i;
  bool nonzero = size.substr(0, i).find_first_not_of('0') != std::string_view::npos;
  if (i < size.size() && size[i] == '.') {
    const std::size_t start = ++i;
    while (i < size.size() && size[i] >= '0' && size[i] <= '9') ++i;
    if (i == start) invalid(what, shown + " has no digits after '.'");
    nonzero = nonzero || size.substr(start, i - start).find_first_not_of('0') != std::string_view::npos;
  }
  if (int_digits == 0) invalid(what, shown + " must start with a number (e.g. \"8G\")");
  if (!nonzero) invalid(what, shown + " must be more than zero");
  std::string unit(size.substr(i));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static const std::set<std::string> units = {"",  "B",  "K",   "KB", "KIB", "M",  "MB",
                                              "MIB", "G", "GB", "GIB", "T",  "TB", "TIB"};
  if (!units.count(unit)) invalid(what, shown + " has an unknown unit (use B, K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB or TiB)");
}

VMSpec::VMSpec() : VMSpec(VMSpecFields()) {}

VMSpec::VMSpec(VMSpecFields fields) : fields_(std::move(fields)) {
  const VMSpecFields& f = fields_;
  if (f.name) validate_vm_name(*f.name, "name");
  if (f.comment) validate_comment(*f.comment);
  std::set<std::string> seen;
  for (const auto& tag : f.tags) {
    validate_tag(tag, "tags");
    if (!seen.insert(tag).second) invalid("tags", "\"" + tag + "\" is given more than once");
  }
  if (f.image) validate_plain_word(*f.image, "image");
  if (f.base) validate_vm_name(*f.base, "base");
  if (f.cpu && *f.cpu == 0) invalid("cpu", "must be at least 1");
  if (f.memory) validate_size(*f.memory, "memory");
  if (f.disk) validate_size(*f.disk, "disk");
  std::set<std::string> seen_integrations;
  for (const auto& integration : f.integrations) {
    validate_plain_word(integration, "integrations");
    if (integration.find(',') != std::string::npos) invalid("integrations", "a name must not contain ','");
    if (!seen_integrations.insert(integration).second) {
      invalid("integrations", "\"" + integration + "\" is given more than once");
    }
  }
  if (f.working_dir) {
    if (f.working_dir->empty()) invalid("working_dir", "must not be empty (leave it unset for the home directory)");
    if (f.working_dir->find('\0') != std::string::npos) invalid("working_dir", "must not contain a NUL byte");
  }
  // Combinations exe.dev can't apply.
  if (f.base && f.image) invalid("image", "can't be used with base: a copy keeps its base's disk");
  if (f.base && !f.integrations.empty()) invalid("integrations", "can't be used with base: exe.dev's copy can't attach them");
  if (!f.base && f.copy_base_tags) invalid("copy_base_tags", "is only meaningful for a copy (set base)");
}

}  // namespace exedev
