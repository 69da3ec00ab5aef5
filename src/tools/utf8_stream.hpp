#pragma once
// Incremental UTF-8 decoding with replacement (internal): bytes that arrive in pieces split
// anywhere become text as Python's incremental 'utf-8' decoder with errors='replace' makes it.

#include <string>
#include <string_view>

namespace exedev::tools::detail {

class Utf8Stream {
 public:
  /// The text of `bytes` after what came before; an incomplete sequence at the end waits for
  /// the next piece.
  std::string feed(std::string_view bytes);
  /// What is still held back (an incomplete sequence), replaced; the stream starts over.
  std::string finish();

 private:
  std::string pending_;
};

}  // namespace exedev::tools::detail
