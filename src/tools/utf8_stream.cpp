#include "tools/utf8_stream.hpp"

#include <exedev/workspace/types.hpp>

#include "common/utf8.hpp"

namespace exedev::tools::detail {

namespace {

// Where an incomplete sequence starts at the end of `bytes` (bytes.size() when there is none):
// a sequence among the last three bytes that is valid so far but cut off by the end.
std::size_t incomplete_tail(std::string_view bytes) {
  const std::size_t n = bytes.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    // A continuation byte: look further back.
    if (exedev::detail::is_utf8_continuation(static_cast<unsigned char>(bytes[n - back]))) continue;
    const auto sequence = exedev::detail::utf8_sequence_at(bytes, n - back);
    return sequence.fault == exedev::detail::Utf8Fault::truncated ? n - back : n;
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
