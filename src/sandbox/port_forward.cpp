#include <exedev/sandbox/port_forward.hpp>

#include "ssh/port_forward.hpp"

namespace exedev {

PortForward::PortForward(std::shared_ptr<ssh::PortForwarder> forwarder) : forwarder_(std::move(forwarder)) {}

PortForward::~PortForward() { close(); }

PortForward::PortForward(PortForward&&) noexcept = default;

PortForward& PortForward::operator=(PortForward&& other) noexcept {
  if (this != &other) {
    close();
    forwarder_ = std::move(other.forwarder_);
  }
  return *this;
}

std::uint16_t PortForward::local_port() const noexcept { return forwarder_ ? forwarder_->local_port() : 0; }

std::uint16_t PortForward::remote_port() const noexcept { return forwarder_ ? forwarder_->remote_port() : 0; }

std::string PortForward::local_url() const { return "http://" + local_host() + ":" + std::to_string(local_port()); }

std::size_t PortForward::active_connections() const noexcept { return forwarder_ ? forwarder_->active_connections() : 0; }

bool PortForward::is_open() const noexcept { return forwarder_ && forwarder_->is_open(); }

void PortForward::close() noexcept {
  if (forwarder_) forwarder_->stop();
  forwarder_.reset();
}

}  // namespace exedev
