#include <exedev/errors.hpp>

#include <fmt/format.h>

namespace exedev {

namespace {

std::string describe(unsigned status, const std::string& command, const std::string& server_message) {
  std::string text = command.empty() ? std::string("exe.dev request") : fmt::format("exe.dev command \"{}\"", command);
  if (status != 0) text += fmt::format(" failed with HTTP {}", status);
  else text += " failed";
  if (!server_message.empty()) text += fmt::format(": {}", server_message);
  return text;
}

}  // namespace

APIError::APIError(unsigned status, std::string command, std::string server_message)
    : Error(describe(status, command, server_message)),
      status_(status),
      command_(std::move(command)),
      server_message_(std::move(server_message)) {}

}  // namespace exedev
