// The client against a server that breaks the protocol: it trickles, streams forever, sends
// invalid chunking, an oversized header, deep or invalid JSON, or output without the run
// protocol's frames. Every operation must end within its documented bound (checked by the
// hang guard of exedev::testing::run, never by measuring time), with an error that names what
// happened and claims no stop the server did not confirm, and no launch request sent twice.
#include "support.hpp"

#include "common/base64.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <thread>

using namespace exedev;
using namespace exedev::test;
using Task0 = boost::asio::awaitable<void>;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

enum class Breakage {
  trickle,         ///< a chunked 200 that sends one byte a second, forever
  endless,         ///< a chunked 200 that streams unframed bytes as fast as it may, forever
  bad_chunk_size,  ///< a chunked 200 whose first chunk size is not hex
  huge_header,     ///< a 2 MiB header line
  unframed,        ///< a complete, well-formed 200 whose body carries no run-protocol frame
  deep_json,       ///< a 200 holding JSON nested 100000 levels deep
  invalid_json,    ///< a 200 holding JSON cut off mid-value
};

// A plain-HTTP server on loopback, on its own thread, that answers every request the same
// broken way and records the request bodies.
class BrokenServer {
 public:
  explicit BrokenServer(Breakage breakage) : breakage_(breakage), acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    asio::co_spawn(ioc_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~BrokenServer() {
    ioc_.stop();
    thread_.join();
  }
  BrokenServer(const BrokenServer&) = delete;
  BrokenServer& operator=(const BrokenServer&) = delete;

  ClientOptions client_options() const {
    ClientOptions o;
    o.endpoint = "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
    o.token = "broken-server-token";
    return o;
  }

  std::vector<std::string> bodies() const {
    std::lock_guard lock(mutex_);
    return bodies_;
  }

  // Requests that launched a command (rather than polling or stopping one).
  std::size_t launches() const {
    std::size_t n = 0;
    for (const auto& body : bodies()) {
      const auto start = body.find("'echo ");
      const auto end = body.find('|', start);
      if (start == std::string::npos || end == std::string::npos) continue;
      const auto script = exedev::detail::base64_decode(body.substr(start + 6, end - start - 6));
      n += script && script->find("setsid /bin/sh \"$d/run\"") != std::string::npos;
    }
    return n;
  }

 private:
  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto socket = co_await acceptor_.async_accept(asio::use_awaitable);
      asio::co_spawn(ioc_, serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    boost::system::error_code ec;
    std::string buffer;
    for (;;) {
      const auto header_end = co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer), "\r\n\r\n", asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      const auto header = buffer.substr(0, header_end);
      std::size_t length = 0;
      if (const auto at = header.find("Content-Length: "); at != std::string::npos) length = std::stoul(header.substr(at + 16));
      if (buffer.size() < header_end + length) {
        const auto missing = header_end + length - buffer.size();
        co_await asio::async_read(socket, asio::dynamic_buffer(buffer), asio::transfer_exactly(missing), asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
      }
      {
        std::lock_guard lock(mutex_);
        bodies_.push_back(buffer.substr(header_end, length));
      }
      buffer.erase(0, header_end + length);
      const bool answered = co_await answer(socket);
      if (!answered) co_return;
    }
  }

  // Sends the broken answer; true when the connection may carry another request.
  asio::awaitable<bool> answer(tcp::socket& socket) {
    boost::system::error_code ec;
    const std::string chunked_ok = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    asio::steady_timer pause(socket.get_executor());
    switch (breakage_) {
      case Breakage::trickle:
      case Breakage::endless: {
        co_await asio::async_write(socket, asio::buffer(chunked_ok), asio::redirect_error(asio::use_awaitable, ec));
        const std::string noise(16 * 1024, 'y');
        const std::string chunk = breakage_ == Breakage::trickle ? std::string("1\r\nx\r\n") : fmt::format("{:x}\r\n{}\r\n", noise.size(), noise);
        while (!ec) {
          co_await asio::async_write(socket, asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
          pause.expires_after(breakage_ == Breakage::trickle ? 1s : 5ms);
          co_await pause.async_wait(asio::use_awaitable);
        }
        co_return false;
      }
      case Breakage::bad_chunk_size: {
        const std::string reply = chunked_ok + "zz\r\nnot a chunk\r\n";
        co_await asio::async_write(socket, asio::buffer(reply), asio::redirect_error(asio::use_awaitable, ec));
        co_return !ec;  // and say nothing more: the client must not wait for the rest
      }
      case Breakage::huge_header: {
        const std::string reply = "HTTP/1.1 200 OK\r\nX-Padding: " + std::string(2 * 1024 * 1024, 'a') + "\r\nContent-Length: 0\r\n\r\n";
        co_await asio::async_write(socket, asio::buffer(reply), asio::redirect_error(asio::use_awaitable, ec));
        co_return !ec;
      }
      case Breakage::unframed: {
        const std::string text = "Welcome to somewhere else\nthis is not the run protocol\n";
        const std::string reply = chunked_ok + fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", text.size(), text);
        co_await asio::async_write(socket, asio::buffer(reply), asio::redirect_error(asio::use_awaitable, ec));
        co_return !ec;
      }
      case Breakage::deep_json:
      case Breakage::invalid_json: {
        const std::string body = breakage_ == Breakage::deep_json
                                     ? std::string(100000, '[') + std::string(100000, ']')
                                     : std::string("{\"vms\": [{\"vm_name\": \"a\", \"status\": tru");
        const std::string reply = fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                                              body.size(), body);
        co_await asio::async_write(socket, asio::buffer(reply), asio::redirect_error(asio::use_awaitable, ec));
        co_return !ec;
      }
    }
    co_return false;
  }

  Breakage breakage_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::string> bodies_;
};

// The documented bound of a run with a timeout is the timeout plus 20 s; the hang guard adds
// a margin for a loaded machine, well short of what the old behaviour took (15 s to 46 s over).
constexpr auto run_timeout = 1s;
inline exedev::testing::RunLimits run_bound() { return limits(std::chrono::seconds(run_timeout + 20s + 8s)); }

// Runs `sleep 60` with a 1 s timeout against `server`; returns the error it ended with.
boost::asio::awaitable<std::exception_ptr> run_against(BrokenServer& server) {
  Client c(co_await boost::asio::this_coro::executor, server.client_options());
  ClientRunOptions o;
  o.timeout = run_timeout;
  std::exception_ptr error;
  try {
    (void)co_await c.run("broken-vm", "sleep 60", o);
  } catch (...) {
    error = std::current_exception();
  }
  co_return error;
}

// Whether `e` holds a nested exception of type N.
template <typename N>
bool nests(const std::exception& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (const N&) {
    return true;
  } catch (...) {
  }
  return false;
}

// The run ended with OutcomeUnknownError (nothing confirmed), naming `what`.
void check_unknown(const std::exception_ptr& error, const std::string& what, bool nested_protocol_error) {
  REQUIRE(error);
  try {
    std::rethrow_exception(error);
  } catch (const OutcomeUnknownError& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find(what) != std::string::npos);
    CHECK(message.find("may have run") != std::string::npos);
    CHECK(message.find("was stopped") == std::string::npos);
    CHECK(nests<ProtocolError>(e) == nested_protocol_error);
  } catch (const std::exception& e) {
    FAIL("expected OutcomeUnknownError, got: " << e.what());
  }
}

}  // namespace

TEST_CASE("broken server: a run whose answer trickles or never ends ends within its bound, outcome unknown") {
  const auto breakage = GENERATE(Breakage::trickle, Breakage::endless);
  BrokenServer server(breakage);
  exedev::testing::run(
      [&](boost::asio::any_io_executor) -> Task0 {
        const auto error = co_await run_against(server);
        check_unknown(error, "did not confirm that the command stopped", false);
        CHECK(server.launches() == 1);
      },
      run_bound());
}

TEST_CASE("broken server: invalid chunking, an oversized header and unframed output are unreadable answers") {
  const auto breakage = GENERATE(Breakage::bad_chunk_size, Breakage::huge_header, Breakage::unframed);
  BrokenServer server(breakage);
  exedev::testing::run(
      [&](boost::asio::any_io_executor) -> Task0 {
        const auto error = co_await run_against(server);
        check_unknown(error, "could not be read", true);
        CHECK(server.launches() == 1);
      },
      run_bound());
}

TEST_CASE("broken server: lobby commands get ProtocolError for unreadable answers, within the request timeout") {
  const auto breakage =
      GENERATE(Breakage::bad_chunk_size, Breakage::huge_header, Breakage::deep_json, Breakage::invalid_json, Breakage::trickle);
  BrokenServer server(breakage);
  exedev::testing::run(
      [&](boost::asio::any_io_executor ex) -> Task0 {
        auto options = server.client_options();
        options.request_timeout = 2s;
        options.retry.max_retries = 0;
        Client c(ex, options);
        std::exception_ptr error;
        try {
          (void)co_await c.list_vms();
        } catch (...) {
          error = std::current_exception();
        }
        REQUIRE(error);
        try {
          std::rethrow_exception(error);
        } catch (const ProtocolError&) {
          CHECK(breakage != Breakage::trickle);
        } catch (const ConnectionError& e) {
          CHECK(breakage == Breakage::trickle);  // timed out: the answer never completed
          CHECK(e.sent());
        }
        // `new` changes state: sent once, never re-sent after an unreadable answer.
        NewVMOptions vm;
        vm.name = "broken-vm";
        error = nullptr;
        try {
          (void)co_await c.new_vm(vm);
        } catch (...) {
          error = std::current_exception();
        }
        CHECK(error);
        std::size_t news = 0;
        for (const auto& body : server.bodies()) news += body.rfind("new ", 0) == 0;
        CHECK(news == 1);
      },
      limits(30s));
}

TEST_CASE("broken server: run_script ends within the request timeout, sent again only when idempotent") {
  const auto breakage = GENERATE(Breakage::trickle, Breakage::endless, Breakage::bad_chunk_size, Breakage::huge_header,
                                 Breakage::unframed);
  const bool idempotent = GENERATE(false, true);
  INFO("breakage " << static_cast<int>(breakage) << ", idempotent " << idempotent);
  BrokenServer server(breakage);
  exedev::testing::run(
      [&](boost::asio::any_io_executor ex) -> Task0 {
        auto options = server.client_options();
        options.request_timeout = 2s;
        options.retry.max_retries = 2;
        options.retry.initial_backoff = 10ms;
        options.retry.max_backoff = 10ms;
        Client c(ex, options);
        ScriptOptions script_options;
        script_options.max_output_bytes = 64 * 1024;
        script_options.idempotent = idempotent;
        std::exception_ptr error;
        try {
          (void)co_await c.run_script("broken-vm", "echo hi", script_options);
        } catch (...) {
          error = std::current_exception();
        }
        REQUIRE(error);  // never a result
        try {
          std::rethrow_exception(error);
        } catch (const OutputLimitError&) {
          CHECK(breakage == Breakage::endless);  // the answer passed the limit: the script ran
        } catch (const OutcomeUnknownError&) {
          CHECK(breakage == Breakage::unframed);  // complete, but no frame: it may have run
        } catch (const ProtocolError&) {
          CHECK((breakage == Breakage::bad_chunk_size || breakage == Breakage::huge_header));
        } catch (const ConnectionError& e) {
          CHECK(breakage == Breakage::trickle);  // the request timed out after sending
          CHECK(e.sent());
        }
        std::size_t sent = 0;
        for (const auto& body : server.bodies()) sent += body.rfind("ssh ", 0) == 0;
        // Re-sent only when running twice is harmless and the answer was lost, cut or
        // unreadable; an answer past the output limit means the script ran.
        const bool resent = idempotent && breakage != Breakage::endless;
        CHECK(sent == (resent ? 3u : 1u));
      },
      limits(60s));
}
