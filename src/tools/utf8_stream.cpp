#include "tools/utf8_stream.hpp"

#include <exedev/workspace/types.hpp>

namespace exedev::tools::detail {

namespace {

// Where an incomplete sequence starts at the end of `bytes` (bytes.size() when there is none):
// a lead byte among the last three whose sequence needs more bytes than follow it.
std::size_t incomplete_tail(std::string_view bytes) {
  const std::size_t n = bytes.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t needed = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
    return needed > back ? n - back : n;
  }
  return n;
}

}  // namespace

std::string Utf8Stream::feed(std::string_view bytes) {
  pending_.append(bytes);
  const auto cut = incomplete_tail(pending_);
  auto text = workspace::utf8_replace_invalid(std::string_view(pending_).substr(0, cut));
  pending_.erase(0, cut);
  return text;
}

std::string Utf8Stream::finish() {
  auto text = workspace::utf8_replace_invalid(pending_);
  pending_.clear();
  return text;
}

}  // namespace exedev::tools::detail
