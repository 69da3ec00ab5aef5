// A client that sends a whole request body in one write, before any answer, still reads the
// answer to a refused request: the emulator answers, half-closes and lingers (as Go's net/http
// server does) instead of closing with unread bytes, which resets the connection.
#include <exedev/emulator/emulator.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

using namespace exedev::emulator;

namespace {

struct Outcome {
  std::string received;
  int error = 0;  // errno of the read that ended the connection, 0 for an orderly end
};

// Sends `request` in one write, waits until the server ends or half-closes the connection
// (never by time: a hang guard of 30 s only), then reads everything that arrived.
Outcome send_whole_and_read(std::uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  std::size_t sent = 0;
  while (sent < request.size()) {
    const auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may already have ended the connection
    sent += static_cast<std::size_t>(n);
  }
  pollfd watched{fd, POLLRDHUP, 0};
  REQUIRE(::poll(&watched, 1, 30'000) == 1);
  Outcome outcome;
  char buffer[4096];
  while (true) {
    const auto n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      outcome.received.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0) outcome.error = errno;
    break;
  }
  ::close(fd);
  return outcome;
}

}  // namespace

TEST_CASE("a refused request whose body was sent whole is answered, not reset", "[integration]") {
  Options options;
  options.plain_http = true;
  Emulator emu(options);
  const std::string body = "ls" + std::string(65537 - 2, ' ');

  SECTION("413 for a body over 64 KiB") {
    const std::string request = "POST /exec HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + emu.token() +
                                "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    const auto outcome = send_whole_and_read(emu.port(), request);
    CHECK(outcome.error == 0);
    CHECK(outcome.received.rfind("HTTP/1.1 413 ", 0) == 0);
    CHECK(outcome.received.find("request body exceeds 64KB limit") != std::string::npos);
  }
  SECTION("401 before the body is read") {
    const std::string request = "POST /exec HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer exe1.WRONG\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    const auto outcome = send_whole_and_read(emu.port(), request);
    CHECK(outcome.error == 0);
    CHECK(outcome.received.rfind("HTTP/1.1 401 ", 0) == 0);
  }
}
