#include "common/base64.hpp"
#include "client/run_protocol.hpp"

#include <exedev/errors.hpp>

#include <catch2/catch.hpp>

using namespace exedev;
using namespace exedev::detail;
using Kind = FrameEvent::Kind;

namespace {

const std::string B = "#EXEDEV-0123abcd#";

std::vector<FrameEvent> feed_all(FrameParser& p, std::string_view bytes, std::size_t piece) {
  std::vector<FrameEvent> all;
  for (std::size_t i = 0; i < bytes.size(); i += piece) {
    for (auto& ev : p.feed(bytes.substr(i, piece))) all.push_back(std::move(ev));
  }
  return all;
}

std::string joined(const std::vector<FrameEvent>& events, char stream) {
  std::string out;
  for (const auto& ev : events)
    if (ev.kind == Kind::data && ev.stream == stream) out += ev.bytes;
  return out;
}

}  // namespace

TEST_CASE("frames parse whatever the read sizes, with noise ignored") {
  std::string bin;
  for (int i = 0; i < 256; ++i) bin += static_cast<char>(i);
  const std::string stream = "Welcome to the VM!\n" + B + " s\n" + B + " o 0\n" + base64_encode(bin.substr(0, 57)) + "\n" +
                             base64_encode(bin.substr(57)) + "\n" + B + " .\n" + B + " e 0\n" +
                             base64_encode("oops\n") + "\n" + B + " .\n" + B + " x 3 -\n";
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, stream.size()}) {
    FrameParser p(B);
    const auto events = feed_all(p, stream, piece);
    REQUIRE(events.size() == 5);
    CHECK(events[0].kind == Kind::started);
    CHECK(joined(events, 'o') == bin);
    CHECK(events[2].offset == 57);
    CHECK(joined(events, 'e') == "oops\n");
    CHECK(events.back().kind == Kind::exit);
    CHECK(events.back().exit_code == 3);
    CHECK(events.back().flag == '-');
    CHECK_FALSE(p.mid_frame());
  }
}

TEST_CASE("other final frames and offsets") {
  FrameParser p(B);
  auto ev = p.feed(B + " o 1000\n" + base64_encode("abc") + "\n" + B + " .\n" + B + " r\n");
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].offset == 1000);
  CHECK(ev[1].kind == Kind::running);
  CHECK(FrameParser(B).feed(B + " l\n").at(0).kind == Kind::lost);
  CHECK(FrameParser(B).feed(B + " n\n").at(0).kind == Kind::not_created);
  const auto x = FrameParser(B).feed(B + " x 137 c\n");
  CHECK(x.at(0).exit_code == 137);
  CHECK(x.at(0).flag == 'c');
  CHECK(FrameParser(B).feed(B + " x 124 t\n").at(0).flag == 't');
}

TEST_CASE("a truncated stream is seen as cut, with the complete lines delivered") {
  FrameParser p(B);
  const std::string full = B + " s\n" + B + " o 0\n" + base64_encode(std::string(57, 'a')) + "\n" +
                           base64_encode(std::string(57, 'b')) + "\n" + B + " .\n" + B + " x 0 -\n";
  const auto cut_at = full.find(base64_encode(std::string(57, 'b'))) + 10;
  const auto events = p.feed(full.substr(0, cut_at));
  CHECK(joined(events, 'o') == std::string(57, 'a'));  // the half line is held back
  CHECK(p.mid_frame());
  FrameParser q(B);
  (void)q.feed(B + " s\n" + B + " x 0");
  CHECK(q.mid_frame());
}

TEST_CASE("garbled frames are protocol errors") {
  CHECK_THROWS_AS(FrameParser(B).feed(B + " q\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " x abc -\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " x 1 z\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " x 1\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " o\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " o 0\nnot base64!\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " o 0\nZg=\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " o 0\n" + B + " s\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + "\n"), ProtocolError);
  CHECK_THROWS_AS(FrameParser(B).feed(B + " o 0\n" + std::string(70000, 'A')), ProtocolError);
  // A line that merely starts like the boundary is noise outside data blocks.
  CHECK(FrameParser(B).feed(B + "X s\n").empty());
  // Long noise lines are skipped without being buffered.
  FrameParser p(B);
  CHECK(p.feed(std::string(200000, 'z') + "\n" + B + " r\n").size() == 1);
}
