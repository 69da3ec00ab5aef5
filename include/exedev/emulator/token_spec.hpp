#pragma once
// What an emulator token may do: exe.dev's command allow list, tag scope and expiries.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>

namespace exedev::emulator {

/// What a token may do. An emulator token is an `exe1.` + 26 × [A-Z2-7] handle.
struct TokenSpec {
  /// Allowed canonical command names; nullopt = exe.dev's defaults (§2.3, which exclude ssh and
  /// rm); an empty list allows nothing. An entry "ssh <vm>" allows ssh to that VM only.
  std::optional<std::vector<std::string>> cmds{};
  /// Tag scope (§2.4): the token sees and touches only VMs with this tag.
  std::optional<std::string> tag{};
  /// Expiry of the token (401 after it).
  std::optional<std::chrono::system_clock::time_point> expires_at{};
  /// Expiry of the signing key row (403 "SSH key has expired" after it).
  std::optional<std::chrono::system_clock::time_point> key_expires_at{};
  /// The key label shown by whoami; empty = "api-key-N".
  std::string label{};
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev::emulator
