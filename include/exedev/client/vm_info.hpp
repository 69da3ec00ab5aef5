#pragma once
// VMInfo: one VM as exe.dev's `ls`, `new` and `cp` describe it, with its VMStatus.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev {

/// A VM's status. `raw` keeps the server's word, for values this library does not know.
struct VMStatus {
  enum class Kind { creating, starting, pending, running, paused, stopped, failed, building, unknown, other };
  Kind kind = Kind::unknown;
  std::string raw;
  /// Known words map to their Kind, the empty string to `unknown`, anything else to `other`.
  [[nodiscard]] static VMStatus parse(std::string_view text);
  friend bool operator==(const VMStatus&, const VMStatus&) = default;
};

/// One VM as `ls` (or `new`/`cp`) describes it. Fields the server left out stay empty (`ls`
/// leaves out `image` for the default image, exeuntu, and sends `shelley_url` only for it).
/// `cp` answers in a legacy form (`name`, `state`, `ssh`) or like `new`; both are read.
struct VMInfo {
  std::string name;
  VMStatus status;
  std::vector<std::string> tags;
  std::string comment;
  std::string image;
  std::string region;
  std::string region_display;  ///< e.g. "Los Angeles, USA"
  std::string shelley_url;
  std::string created_at;  ///< RFC 3339, as sent.
  std::string ssh_dest;  ///< `host` or `user@host`, as sent
  std::string ssh_host;
  std::string ssh_user;
  /// The port of the VM's SSH endpoint; nullopt when the answer names none (exe.dev's `ls`;
  /// an emulator that cannot serve SSH).
  std::optional<std::uint16_t> ssh_port;
  /// https://<vm>.exe.xyz: where exe.dev's HTTPS proxy serves the VM (its proxy port at the
  /// bare URL, ports 3000-9999 at https://<vm>.exe.xyz:<port>/).
  std::string https_url;
  /// The VM port the bare https_url serves: `new` sends it, `ls` does not (nullopt; ask
  /// Client::share_port).
  std::optional<std::uint16_t> proxy_port;
  std::optional<std::uint64_t> disk_capacity_bytes;
  std::optional<std::uint64_t> memory_capacity_bytes;
  std::optional<unsigned> allocated_cpus;
};

}  // namespace exedev
