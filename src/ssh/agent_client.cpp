#include "ssh/agent_client.hpp"

#include <exedev/ssh/errors.hpp>

#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace exedev::ssh {

namespace {

[[noreturn]] void agent_failed(const std::string& socket_path, const std::string& problem) {
  throw SshKeyUnusableError(fmt::format("SSH: the ssh-agent at {} {}", socket_path, problem), "ssh-agent");
}

}  // namespace

AgentClient::AgentClient(const std::string& socket_path, std::chrono::milliseconds timeout) : socket_path_(socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(address.sun_path)) agent_failed(socket_path, "has an unusable socket path");
  std::memcpy(address.sun_path, socket_path.data(), socket_path.size());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) agent_failed(socket_path, fmt::format("cannot be reached: {}", std::strerror(errno)));
  timeval limit{};
  limit.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  limit.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    agent_failed(socket_path, fmt::format("cannot be reached: {}", std::strerror(error)));
  }
}

AgentClient::~AgentClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::string AgentClient::exchange(const std::string& request) {
  for (std::size_t sent = 0; sent < request.size();) {
    const auto n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) agent_failed(socket_path_, fmt::format("took no request: {}", std::strerror(errno)));
    sent += static_cast<std::size_t>(n);
  }
  const auto read_exactly = [&](std::size_t count) {
    std::string bytes(count, '\0');
    for (std::size_t got = 0; got < count;) {
      const auto n = ::recv(fd_, bytes.data() + got, count - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) agent_failed(socket_path_, "closed the connection before answering");
      if (n < 0) agent_failed(socket_path_, fmt::format("did not answer: {}", std::strerror(errno)));
      got += static_cast<std::size_t>(n);
    }
    return bytes;
  };
  const auto length = agent_message_length(read_exactly(4));
  if (!length) agent_failed(socket_path_, "answered with an empty or oversized message");
  return read_exactly(*length);
}

std::vector<AgentIdentity> AgentClient::identities() {
  auto parsed = parse_agent_identities(exchange(agent_identities_request()));
  if (!parsed) agent_failed(socket_path_, "answered the request for its keys with a malformed message");
  return std::move(*parsed);
}

std::string AgentClient::sign(std::string_view key_blob, std::string_view data) {
  auto signature = parse_agent_signature(exchange(agent_sign_request(key_blob, data)));
  if (!signature) agent_failed(socket_path_, "refused to sign (is the key still loaded, or confirmation declined?)");
  return std::move(*signature);
}

}  // namespace exedev::ssh
