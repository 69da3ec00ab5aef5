#pragma once
// Points an exedev::Client at an emulator. Header-only, so exedev::emulator itself stays
// independent of the client it checks; include it where both are linked.

#include <exedev/client.hpp>
#include <exedev/emulator/emulator.hpp>

#include <optional>
#include <string>

namespace exedev::emulator {

/// ClientOptions that reach `emulator`: its URL, its CA file, and `token` (by default the
/// emulator's token that may run every command). Everything else keeps ClientOptions' defaults.
inline ClientOptions client_options(const Emulator& emulator, std::optional<std::string> token = std::nullopt) {
  ClientOptions options;
  options.endpoint = emulator.url();
  options.ca_file = emulator.ca_file().string();
  options.token = token ? std::move(token) : emulator.token();
  return options;
}

}  // namespace exedev::emulator
