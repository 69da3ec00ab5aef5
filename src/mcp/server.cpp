#include "mcp/server.hpp"

#include "common/coroutines.hpp"
#include "common/event.hpp"
#include "common/exceptions.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <unistd.h>

#include <array>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace exedev::mcp {

namespace {

namespace asio = boost::asio;
using asio::use_awaitable;
using tools::Toolset;

// A descriptor of our own, so that closing it leaves the process's stdin and stdout alone.
int duplicate(int fd) {
  const int copy = ::dup(fd);
  if (copy < 0) throw std::system_error(errno, std::generic_category(), "exedev-mcp: dup");
  return copy;
}

class Server {
 public:
  Server(const asio::any_io_executor& executor, std::vector<std::shared_ptr<Toolset>> toolsets, ServeOptions options)
      : executor_(executor),
        options_(std::move(options)),
        session_(options_.info),
        toolsets_(std::move(toolsets)),
        input_(executor, duplicate(options_.input_fd)),
        output_(executor, duplicate(options_.output_fd)) {}

  asio::awaitable<int> run() {
    start_writer();
    co_await read_input();  // a cancellation of serve() ends the read as the end of input does
    EXEDEV_AWAIT_DESPITE_CANCELLATION(wind_down_error, detail::shielded(wind_down()));
    if (wind_down_error) std::rethrow_exception(wind_down_error);
    co_return shutdown_ ? shutdown_->exit_code : 0;
  }

 private:
  asio::awaitable<void> read_input() {
    std::array<char, 64 * 1024> chunk{};
    std::string line;
    bool skipping = false;  // inside a line too long to handle, answered already
    while (!shutdown_) {
      const auto [error, size] = co_await input_.async_read_some(asio::buffer(chunk), asio::as_tuple(use_awaitable));
      if (error) co_return;  // end of input, a read error or a shutdown: all end the session
      std::string_view data(chunk.data(), size);
      while (!data.empty() && !shutdown_) {
        const auto newline = data.find('\n');
        const auto part = data.substr(0, newline);
        if (!skipping) line.append(part);
        if (!skipping && line.size() > options_.max_message_bytes) {
          apply(session_.oversized_message(options_.max_message_bytes));
          line.clear();
          skipping = true;
        }
        if (newline == std::string_view::npos) break;
        if (!skipping) apply(session_.receive(line));
        line.clear();
        skipping = false;
        data.remove_prefix(newline + 1);
      }
    }
  }

  // Cancels what runs, waits for it to stop, then for the queued messages to be written.
  asio::awaitable<void> wind_down() {
    if (!shutdown_) apply(session_.end_of_input());
    while (!running_.empty()) co_await work_done_.wait();
    writer_stopping_ = true;
    outbox_ready_.notify();
    while (!writer_finished_) co_await writer_done_.wait();
  }

  void start_writer() {
    asio::co_spawn(executor_, write_output(), [this](std::exception_ptr) {
      writer_finished_ = true;
      writer_done_.notify();
    });
  }

  asio::awaitable<void> write_output() {
    for (;;) {
      if (outbox_.empty()) {
        if (writer_stopping_) co_return;
        co_await outbox_ready_.wait();
        continue;
      }
      outbox_.front().push_back('\n');
      const auto [error, written] =
          co_await asio::async_write(output_, asio::buffer(outbox_.front()), asio::as_tuple(use_awaitable));
      outbox_.pop_front();
      if (error) {
        // The client is gone: nothing more can be said; end the session as at end of input.
        output_broken_ = true;
        outbox_.clear();
        apply(session_.end_of_input());
        co_return;
      }
    }
  }

  void apply(Actions actions) {
    for (auto& action : actions) {
      if (auto* send = std::get_if<SendMessage>(&action)) {
        if (output_broken_) continue;
        outbox_.push_back(std::move(send->json));
        outbox_ready_.notify();
      } else if (const auto* list = std::get_if<ListTools>(&action)) {
        start(list->work, list_tools(list->work));
      } else if (auto* call = std::get_if<StartCall>(&action)) {
        const WorkId work = call->work;
        start(work, run_call(work, std::move(*call)));
      } else if (const auto* cancel = std::get_if<CancelCall>(&action)) {
        if (const auto found = running_.find(cancel->work); found != running_.end())
          found->second->emit(asio::cancellation_type::terminal);
      } else if (auto* shutdown = std::get_if<Shutdown>(&action)) {
        if (shutdown->exit_code != 0) std::cerr << "exedev-mcp: " << shutdown->reason << "\n";
        shutdown_ = std::move(*shutdown);
        input_.cancel();
      }
    }
  }

  // Runs one piece of work on its own coroutine, cancellable through running_.
  void start(WorkId work, asio::awaitable<void> body) {
    auto& signal = *running_.emplace(work, std::make_unique<asio::cancellation_signal>()).first->second;
    asio::co_spawn(executor_, std::move(body), asio::bind_cancellation_slot(signal.slot(), [this, work](std::exception_ptr) {
                     running_.erase(work);
                     if (running_.empty()) work_done_.notify();
                   }));
  }

  asio::awaitable<std::vector<tools::ToolDefinition>> list_all() {
    std::vector<tools::ToolDefinition> all;
    for (const auto& toolset : toolsets_) {
      for (auto& tool : co_await toolset->tools()) {
        owners_[tool.name] = toolset;
        all.push_back(std::move(tool));
      }
    }
    co_return all;
  }

  asio::awaitable<void> list_tools(WorkId work) {
    std::exception_ptr failure;
    try {
      const auto all = co_await list_all();
      apply(session_.tools_listed(work, all));
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) apply(session_.tools_list_failed(work, describe(failure)));
  }

  asio::awaitable<void> run_call(WorkId work, StartCall call) {
    std::exception_ptr failure;
    try {
      // Which tools exist may change with the workspace: an unknown name looks again once.
      if (!owners_.contains(call.name)) co_await list_all();
      const auto owner = owners_.find(call.name);
      if (owner == owners_.end()) {
        apply(session_.call_unknown_tool(work));
        co_return;
      }
      tools::ToolCallContext context;
      context.tool_call_id = call.tool_call_id;
      context.on_output = [this, work](std::string_view text) { apply(session_.call_output(work, text)); };
      const std::shared_ptr<Toolset> toolset = owner->second;
      const auto result = co_await toolset->call(call.name, std::move(call.arguments), std::move(context));
      apply(session_.call_finished(work, result));
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) apply(session_.call_crashed(work, describe(failure)));
  }

  asio::any_io_executor executor_;
  ServeOptions options_;
  Session session_;
  std::vector<std::shared_ptr<Toolset>> toolsets_;
  std::map<std::string, std::shared_ptr<Toolset>> owners_;  ///< tool name -> its tool set
  asio::posix::stream_descriptor input_;
  asio::posix::stream_descriptor output_;
  std::deque<std::string> outbox_;
  // Wake-ups for coroutines of this single-threaded server waiting on a condition.
  exedev::detail::Event outbox_ready_;
  exedev::detail::Event work_done_;
  exedev::detail::Event writer_done_;
  bool writer_stopping_ = false;
  bool writer_finished_ = false;
  bool output_broken_ = false;
  std::map<WorkId, std::unique_ptr<asio::cancellation_signal>> running_;
  std::optional<Shutdown> shutdown_;
};

}  // namespace

std::string describe(const std::exception_ptr& error) {
  const auto* e = exedev::detail::exception_as<std::exception>(error);
  return e != nullptr ? e->what() : "unknown exception";
}

workspace::Task<int> serve(std::vector<std::shared_ptr<tools::Toolset>> toolsets, ServeOptions options) {
  Server server(co_await asio::this_coro::executor, std::move(toolsets), std::move(options));
  co_return co_await server.run();
}

}  // namespace exedev::mcp
