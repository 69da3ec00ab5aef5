// The run-output frame decoder on any output: it either decodes or throws ProtocolError, and
// the events do not depend on how the output was split into reads.
#include "fuzz.hpp"

#include "client/run_protocol.hpp"

#include <exedev/errors.hpp>

#include <optional>
#include <string>
#include <vector>

using exedev::detail::FrameEvent;
using exedev::detail::FrameParser;
using exedev::fuzz::require;

namespace {

constexpr const char* boundary = "#EXEDEV-0123456789abcdef#";

struct Decoded {
  std::vector<FrameEvent> events;
  bool failed = false;
  bool mid_frame = false;
};

bool same(const FrameEvent& a, const FrameEvent& b) {
  return a.kind == b.kind && a.stream == b.stream && a.offset == b.offset && a.bytes == b.bytes &&
         a.exit_code == b.exit_code && a.flag == b.flag;
}

// Feeds `output` in pieces of the given sizes (cycled), stopping at the first ProtocolError.
Decoded decode(std::string_view output, const std::vector<std::size_t>& pieces) {
  FrameParser parser(boundary);
  Decoded d;
  std::size_t next = 0;
  try {
    while (!output.empty()) {
      const auto n = std::min(output.size(), pieces.empty() ? output.size() : pieces[next++ % pieces.size()]);
      for (auto& ev : parser.feed(output.substr(0, n))) d.events.push_back(std::move(ev));
      output.remove_prefix(n);
    }
  } catch (const exedev::ProtocolError&) {
    d.failed = true;
  }
  d.mid_frame = parser.mid_frame();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first bytes choose the read sizes; the rest is the command's output.
  if (size < 1) return 0;
  const std::size_t count = data[0] % 8;
  if (size < 1 + count) return 0;
  std::vector<std::size_t> pieces;
  for (std::size_t i = 0; i < count; ++i) pieces.push_back(1 + data[1 + i] % 64);
  const auto output = exedev::fuzz::bytes(data + 1 + count, size - 1 - count);

  const auto whole = decode(output, {});
  const auto split = decode(output, pieces);
  require(whole.failed == split.failed, "a garbled frame is garbled however it is split");
  if (!whole.failed) {
    require(whole.events.size() == split.events.size(), "the same events however the output is split");
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
      require(same(whole.events[i], split.events[i]), "the same events however the output is split");
    }
    require(whole.mid_frame == split.mid_frame, "the same cut state however the output is split");
  }
  return 0;
}
