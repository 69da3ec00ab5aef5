// HTTP responses through Beast's parser configured with the client's limits (the function the
// transport uses): a response or an exedev::Error, never a crash; a body read into memory
// never exceeds the client's limit.
#include "fuzz.hpp"

#include "client/https_pool.hpp"

#include <exedev/errors.hpp>

#include <string>

using exedev::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte chooses whether a sink streams the body, and when it stops reading.
  const unsigned mode = data[0];
  const auto raw = exedev::fuzz::bytes(data + 1, size - 1);
  const exedev::detail::HttpsPoolConfig limits;
  try {
    if (mode % 2 == 0) {
      const auto r = exedev::detail::parse_http_response(raw);
      require(r.body.size() <= limits.max_body_bytes, "a buffered body stays within the limit");
    } else {
      std::size_t streamed = 0;
      std::size_t calls = 0;
      const auto r = exedev::detail::parse_http_response(raw, [&](std::string_view piece) {
        streamed += piece.size();
        return ++calls < mode / 2 + 1;
      });
      require(streamed <= raw.size(), "a sink never gets more bytes than arrived");
      require(r.body.size() <= limits.max_body_bytes, "a buffered body stays within the limit");
    }
  } catch (const exedev::Error&) {
  }
  return 0;
}
