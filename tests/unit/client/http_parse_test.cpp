// Beast's parser, configured as the transport configures it: trailers after the last chunk are
// merged into the message's fields (the X-Exe-Exit exit status), bodies stream in pieces.
#include "client/https_pool.hpp"

#include <exedev/errors.hpp>

#include <catch2/catch.hpp>

using namespace exedev;
using namespace exedev::detail;

TEST_CASE("chunked body with an X-Exe-Exit trailer") {
  const std::string raw =
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTrailer: X-Exe-Exit\r\n"
      "Transfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Exe-Exit: 42\r\n\r\n";
  std::string streamed;
  const auto r = parse_http_response(raw, [&](std::string_view b) {
    streamed += b;
    return true;
  });
  CHECK(r.status == 200);
  CHECK(r.complete);
  CHECK(streamed == "hello world");
  CHECK(r.body.empty());
  REQUIRE(r.exe_exit);
  CHECK(*r.exe_exit == "42");
}

TEST_CASE("no trailer, error bodies buffered, Retry-After read") {
  const auto r = parse_http_response(
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 31\r\n\r\n{\"error\":\"rate limit exceeded\"}",
      [](std::string_view) { return true; });
  CHECK(r.status == 429);
  CHECK(r.body == "{\"error\":\"rate limit exceeded\"}");
  CHECK(r.retry_after == std::chrono::milliseconds(7000));
  CHECK_FALSE(r.exe_exit);
  const auto plain = parse_http_response(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  CHECK(plain.body == "abc");
  CHECK_FALSE(plain.exe_exit);
}

TEST_CASE("a sink can stop the body; broken messages are protocol errors") {
  const auto r = parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabcdef",
                                     [](std::string_view) { return false; });
  CHECK_FALSE(r.complete);
  CHECK_THROWS_AS(parse_http_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"), ProtocolError);
  CHECK_THROWS_AS(parse_http_response("garbage\r\n\r\n"), ProtocolError);
  CHECK_THROWS_AS(parse_http_response("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'x') + "\r\n\r\n"), ProtocolError);
}

TEST_CASE("a response that ends inside a header line or a chunk size is incomplete, not a hang") {
  // Found by fuzz_http_response: bytes the parser cannot use without more used to loop forever.
  CHECK_THROWS_AS(parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A"), ProtocolError);
  CHECK_THROWS_AS(parse_http_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1"), ProtocolError);
  CHECK_THROWS_AS(parse_http_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Exe-Exit: 0"),
                  ProtocolError);
  CHECK_THROWS_AS(parse_http_response("HTTP/1.1 2"), ProtocolError);
}
