// Port forwarding: one local TCP connection over one direct-tcpip channel (Connection::forward),
// and the listener that makes a relay of each connection it accepts (PortForwarder).
#include "ssh/port_forward.hpp"

#include "common/coroutines.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>
#include <libssh2.h>

#include <vector>

namespace exedev::ssh {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using Call = SessionDriver::Call;
using asio::ip::tcp;

namespace {

// Bytes moved per read on either side: libssh2's default channel window is 2 MiB, its largest
// packet 32 KiB of data.
constexpr std::size_t relay_chunk = 64 * 1024;

void throw_if_aborted(const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted) throw boost::system::system_error(ec);
}

}  // namespace

asio::awaitable<LIBSSH2_CHANNEL*> Connection::open_direct_tcpip(const std::string& host, std::uint16_t port,
                                                                 const tcp::endpoint& origin) {
  LIBSSH2_CHANNEL* channel = nullptr;
  const std::string origin_host = origin.address().to_string();
  // Like every channel opening, run to its end whatever happens to the caller.
  const long rc = co_await run_under_opening_lock("opening a forwarded connection", [&] {
    channel = ::libssh2_channel_direct_tcpip_ex(driver_->session(), host.c_str(), port, origin_host.c_str(), origin.port());
    return channel != nullptr ? 0L : static_cast<long>(::libssh2_session_last_errno(driver_->session()));
  });
  if (channel == nullptr) {
    throw ConnectionError(fmt::format("SSH: {} refused to open a connection to {}:{} on the VM (nothing listening there, "
                                      "or TCP forwarding disabled): {}",
                                      driver_->where(), host, port, driver_->last_error_message()),
                          false, libssh2_error(static_cast<int>(rc)));
  }
  co_await exedev::detail::throw_if_cancelled();
  co_return channel;
}

asio::awaitable<void> Connection::forward(tcp::socket local, std::string host, std::uint16_t port) {
  auto self = shared_from_this();
  boost::system::error_code ignored;
  const auto origin = local.remote_endpoint(ignored);
  LIBSSH2_CHANNEL* channel = nullptr;
  try {
    channel = co_await open_direct_tcpip(host, port, origin);
  } catch (...) {
    local.close(ignored);
    throw;
  }
  // Both directions at once; the first to fail cancels the other. Each decides itself when a
  // cancellation ends it (never in the middle of a half-sent packet), so Asio must not throw at
  // its co_awaits meanwhile.
  const bool throw_if_cancelled_before = co_await asio::this_coro::throw_if_cancelled();
  co_await asio::this_coro::throw_if_cancelled(false);
  std::exception_ptr failure;
  try {
    auto upstream = relay_local_to_channel(local, channel);
    auto downstream = relay_channel_to_local(channel, local);
    co_await (std::move(upstream) && std::move(downstream));
  } catch (...) {
    failure = std::current_exception();
  }
  local.close(ignored);
  // The server's close may come later; nobody needs to wait for it.
  close_channel_in_background(channel, false);
  co_await asio::this_coro::throw_if_cancelled(throw_if_cancelled_before);
  if (failure) std::rethrow_exception(failure);
}

asio::awaitable<void> Connection::relay_local_to_channel(tcp::socket& local, LIBSSH2_CHANNEL* channel) {
  co_await asio::this_coro::throw_if_cancelled(false);
  const Call call{"a forwarded connection", true, true};
  const auto ticket = driver_->new_ticket();
  std::vector<char> buffer(relay_chunk);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t count = co_await local.async_read_some(asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
    throw_if_aborted(ec);
    if (ec) break;  // end of stream (or reset): nothing more to send
    std::size_t sent = 0;
    while (sent < count) {
      const long rc = driver_->attempt(ticket, [&] {
        return static_cast<long>(::libssh2_channel_write_ex(channel, 0, buffer.data() + sent, count - sent));
      });
      if (rc > 0) {
        sent += static_cast<std::size_t>(rc);
      } else if (rc == LIBSSH2_ERROR_EAGAIN) {
        co_await driver_->wait(ticket, call);  // throws operation_aborted unless our packet is half-sent
      } else {
        driver_->throw_if_dropped(call);
        co_return;  // the VM's side closed the channel
      }
    }
  }
  for (;;) {
    const long rc = driver_->attempt(ticket, [&] { return static_cast<long>(::libssh2_channel_send_eof(channel)); });
    if (rc != LIBSSH2_ERROR_EAGAIN) break;
    co_await driver_->wait(ticket, call);
  }
  driver_->throw_if_dropped(call);
}

asio::awaitable<void> Connection::relay_channel_to_local(LIBSSH2_CHANNEL* channel, tcp::socket& local) {
  co_await asio::this_coro::throw_if_cancelled(false);
  const Call call{"a forwarded connection", true, true};
  const auto ticket = driver_->new_ticket();
  std::vector<char> buffer(relay_chunk);
  for (;;) {
    const long rc = driver_->attempt(ticket, [&] {
      return static_cast<long>(::libssh2_channel_read_ex(channel, 0, buffer.data(), buffer.size()));
    });
    if (rc > 0) {
      boost::system::error_code ec;
      co_await asio::async_write(local, asio::buffer(buffer.data(), static_cast<std::size_t>(rc)),
                                 asio::redirect_error(asio::use_awaitable, ec));
      throw_if_aborted(ec);
      if (ec) co_return;  // the local peer is gone; the relay ends when the other direction does
    } else if (rc == LIBSSH2_ERROR_EAGAIN) {
      co_await driver_->wait(ticket, call);
    } else if (rc == 0 || is_channel_gone(rc)) {
      // The VM's side finished sending: pass the end of stream on, keep the other direction.
      boost::system::error_code ignored;
      local.shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    } else {
      driver_->throw_if_dropped(call);
      throw ConnectionError(fmt::format("SSH: reading a forwarded connection from {} failed: {}", driver_->where(),
                                        driver_->last_error_message()),
                            true, libssh2_error(static_cast<int>(rc)));
    }
  }
}

std::shared_ptr<PortForwarder> PortForwarder::start(std::shared_ptr<Connection> connection, std::string host,
                                                    std::uint16_t remote_port) {
  auto forwarder = std::make_shared<PortForwarder>(std::move(connection), std::move(host), remote_port);
  const auto executor = forwarder->acceptor_.get_executor();
  asio::co_spawn(executor, forwarder->accept_loop(forwarder), asio::detached);
  return forwarder;
}

PortForwarder::PortForwarder(std::shared_ptr<Connection> connection, std::string host, std::uint16_t remote_port)
    : connection_(std::move(connection)), host_(std::move(host)), remote_port_(remote_port),
      acceptor_(connection_->executor(), tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
  local_port_ = acceptor_.local_endpoint().port();
}

bool PortForwarder::is_open() const noexcept { return !stopped_ && connection_->is_open(); }

void PortForwarder::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  // A relay's signal is removed once the relay has ended, which an emit never brings about at once.
  for (auto& [id, signal] : active_) signal->emit(asio::cancellation_type::terminal);
}

asio::awaitable<void> PortForwarder::accept_loop(std::shared_ptr<PortForwarder> self) {
  while (!stopped_) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) break;
    if (ec) continue;  // a connection that failed before we took it (reset, out of descriptors)
    if (!connection_->is_open()) {
      // The SSH connection ended: nothing can reach the VM through this listener any more.
      stop();
      break;
    }
    const auto id = ++last_id_;
    auto& signal = active_[id];
    signal = std::make_unique<asio::cancellation_signal>();
    // The signal goes when the relay's coroutine has ended, in its completion handler: the
    // coroutine's cancellation slot refers to the signal until its last resumption.
    asio::co_spawn(acceptor_.get_executor(), serve(self, std::move(socket)),
                   asio::bind_cancellation_slot(signal->slot(), [self, id](const std::exception_ptr&) {
                     self->active_.erase(id);
                   }));
  }
}

asio::awaitable<void> PortForwarder::serve(std::shared_ptr<PortForwarder> /*keep_alive*/, tcp::socket socket) {
  try {
    co_await connection_->forward(std::move(socket), host_, remote_port_);
  } catch (...) {
    // One connection's failure (refused by the VM, the SSH connection lost, stopped) closes
    // that connection only; `forward` has closed its socket.
  }
}

}  // namespace exedev::ssh
