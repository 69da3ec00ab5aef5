// The stdio loop of exedev-mcp over pipes, with a scripted tool set: the wiring between the
// session core and Asio (calls, live output, cancellation, end of input, end_run).
#include "mcp/server.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/testing/run.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

namespace asio = boost::asio;
using asio::use_awaitable;
using nlohmann::json;
using namespace exedev;

namespace {

// echo: returns its arguments; fail: a ToolFailed; end: end_run; slow: streams two chunks of
// output, then waits until it is cancelled.
class ScriptedTools final : public tools::Toolset {
 public:
  bool slow_started = false;
  bool slow_cancelled = false;

  std::string id() const override { return "scripted"; }

  workspace::Task<std::vector<tools::ToolDefinition>> tools() override {
    std::vector<tools::ToolDefinition> list;
    for (const char* name : {"echo", "fail", "end", "slow"})
      list.push_back({name, std::string("the ") + name + " tool", R"({"type":"object","properties":{}})"});
    co_return list;
  }

  workspace::Task<tools::ToolResult> call(std::string name, std::string arguments, tools::ToolCallContext context) override {
    if (name == "echo") co_return tools::ToolResult{.outcome = tools::ToolOutcome::success, .text = arguments, .error = {}};
    if (name == "fail") co_return tools::ToolResult{.outcome = tools::ToolOutcome::failed, .text = "it failed", .error = {}};
    if (name == "end") co_return tools::ToolResult{.outcome = tools::ToolOutcome::end_run, .text = "VM gone", .error = {}};
    slow_started = true;
    if (context.on_output) {
      context.on_output("first chunk\n");
      context.on_output("second chunk\n");
    }
    asio::steady_timer forever(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    try {
      co_await forever.async_wait(use_awaitable);
    } catch (...) {
      slow_cancelled = true;
      throw;
    }
    co_return tools::ToolResult{};
  }
};

struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    read = fds[0];
    write = fds[1];
  }
};

// The client's side: writes lines to the server's input, reads lines from its output.
class Client {
 public:
  Client(const asio::any_io_executor& executor, int to_server, int from_server)
      : to_server_(executor, to_server), from_server_(executor, from_server) {}

  // Queue a line, then flush(): no argument is built inside a co_await expression (GCC 12).
  void post(std::string line) {
    outgoing_ += line;
    outgoing_.push_back('\n');
  }
  asio::awaitable<void> flush() {
    co_await asio::async_write(to_server_, asio::buffer(outgoing_), use_awaitable);
    outgoing_.clear();
  }
  asio::awaitable<json> receive() {
    const auto size = co_await asio::async_read_until(from_server_, asio::dynamic_buffer(buffer_), '\n', use_awaitable);
    const auto message = json::parse(buffer_.substr(0, size - 1));
    buffer_.erase(0, size);
    co_return message;
  }
  /// Whether the server's output has ended with nothing more in it.
  asio::awaitable<bool> output_ended() {
    const auto [error, size] = co_await asio::async_read_until(from_server_, asio::dynamic_buffer(buffer_), '\n',
                                                               asio::as_tuple(use_awaitable));
    co_return error == asio::error::eof && buffer_.empty();
  }
  void close_input() { to_server_.close(); }

 private:
  asio::posix::stream_descriptor to_server_;
  asio::posix::stream_descriptor from_server_;
  std::string buffer_;
  std::string outgoing_;
};

std::string request(int id, const std::string& method, const json& params = json::object()) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
}

// Runs serve() on pipes beside `body`, which plays the client; returns serve()'s exit status.
template <typename Body>
int with_server(std::shared_ptr<ScriptedTools> tools, Body body, std::size_t max_message_bytes = 1024 * 1024) {
  return testing::run([&](asio::any_io_executor executor) -> asio::awaitable<int> {
    Pipe input;
    Pipe output;
    mcp::ServeOptions options;
    options.info.version = "test";
    options.input_fd = input.read;
    options.output_fd = output.write;
    options.max_message_bytes = max_message_bytes;
    std::vector<std::shared_ptr<tools::Toolset>> toolsets{tools};
    std::optional<int> status;
    std::exception_ptr failure;
    asio::co_spawn(executor, mcp::serve(toolsets, options), [&](std::exception_ptr error, int exit) {
      failure = error;
      status = exit;
    });
    // serve() duplicated its descriptors; these copies belong to the test.
    ::close(input.read);
    ::close(output.write);
    Client client(executor, input.write, output.read);
    client.post(request(0, "initialize", {{"protocolVersion", "2025-06-18"}}));
    co_await client.flush();
    const auto initialized = co_await client.receive();
    CO_REQUIRE(initialized["result"]["protocolVersion"] == "2025-06-18");
    co_await body(client);
    CO_CHECK(co_await client.output_ended());
    if (failure) std::rethrow_exception(failure);
    CO_REQUIRE(status.has_value());
    co_return *status;
  });
}

}  // namespace

TEST_CASE("serve: tools are listed and called; live output arrives as progress; EOF ends with status 0") {
  auto tools = std::make_shared<ScriptedTools>();
  const int status = with_server(tools, [&](Client& client) -> asio::awaitable<void> {
    client.post(request(1, "tools/list"));
    co_await client.flush();
    const auto listed = co_await client.receive();
    CO_REQUIRE(listed["result"]["tools"].size() == 4);
    CO_CHECK(listed["result"]["tools"][0]["name"] == "echo");

    client.post(request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"say", "hi"}}}}));
    co_await client.flush();
    const auto echoed = co_await client.receive();
    CO_CHECK(echoed["id"] == 2);
    CO_CHECK(json::parse(echoed["result"]["content"][0]["text"].get<std::string>()) == json{{"say", "hi"}});

    client.post(request(3, "tools/call", {{"name", "fail"}}));
    co_await client.flush();
    const auto failed = co_await client.receive();
    CO_CHECK(failed["result"]["isError"] == true);
    CO_CHECK(failed["result"]["content"][0]["text"] == "it failed");

    client.post(request(4, "tools/call", {{"name", "missing"}}));
    co_await client.flush();
    CO_CHECK((co_await client.receive())["error"]["code"] == mcp::invalid_params);

    client.post("not json");
    co_await client.flush();
    CO_CHECK((co_await client.receive())["error"]["code"] == mcp::parse_error);

    // Live output, then a cancellation: the call stops and is never answered.
    client.post(request(5, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", "p5"}}}}));
    co_await client.flush();
    const auto first = co_await client.receive();
    CO_CHECK(first["method"] == "notifications/progress");
    CO_CHECK(first["params"]["progressToken"] == "p5");
    CO_CHECK(first["params"]["message"] == "first chunk\n");
    CO_CHECK((co_await client.receive())["params"]["message"] == "second chunk\n");
    client.post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})");
    co_await client.flush();
    client.post(request(6, "ping"));
    co_await client.flush();
    CO_CHECK((co_await client.receive())["id"] == 6);
    client.close_input();
  });
  CHECK(status == 0);
  CHECK(tools->slow_cancelled);
}

TEST_CASE("serve: the end of input cancels a call in flight") {
  auto tools = std::make_shared<ScriptedTools>();
  const int status = with_server(tools, [&](Client& client) -> asio::awaitable<void> {
    client.post(request(1, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", 1}}}}));
    co_await client.flush();
    // Its output says it runs.
    CO_CHECK((co_await client.receive())["params"]["message"] == "first chunk\n");
    CO_CHECK((co_await client.receive())["params"]["message"] == "second chunk\n");
    CO_CHECK(tools->slow_started);
    client.close_input();
  });
  CHECK(status == 0);
  CHECK(tools->slow_cancelled);
}

TEST_CASE("serve: end_run answers with an error, cancels the rest and exits with status 1") {
  auto tools = std::make_shared<ScriptedTools>();
  const int status = with_server(tools, [&](Client& client) -> asio::awaitable<void> {
    client.post(request(1, "tools/call", {{"name", "slow"}}));
    co_await client.flush();
    client.post(request(2, "tools/call", {{"name", "end"}}));
    co_await client.flush();
    const auto ended = co_await client.receive();
    CO_CHECK(ended["id"] == 2);
    CO_CHECK(ended["error"]["code"] == mcp::workspace_unavailable);
    // The server stops reading: its output ends although the client never closed its input.
  });
  CHECK(status == 1);
  CHECK(tools->slow_cancelled);
}

TEST_CASE("serve: a line over the size limit is a parse error and the next line is read") {
  auto tools = std::make_shared<ScriptedTools>();
  const int status = with_server(
      tools,
      [&](Client& client) -> asio::awaitable<void> {
        client.post(std::string(300 * 1024, 'x'));
        co_await client.flush();
        CO_CHECK((co_await client.receive())["error"]["code"] == mcp::parse_error);
        client.post(request(1, "ping"));
        co_await client.flush();
        CO_CHECK((co_await client.receive())["id"] == 1);
        client.close_input();
      },
      /*max_message_bytes=*/100 * 1024);
  CHECK(status == 0);
}
