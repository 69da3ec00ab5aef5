#pragma once
// What the Client's commands answer beyond VMInfo: resize, rm, whoami, and a raw /exec request.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace exedev {

/// What `resize` changed: before and after, for what was asked (memory and CPUs come together).
struct ResizeResult {
  std::optional<std::uint64_t> old_memory_bytes;
  std::optional<std::uint64_t> new_memory_bytes;
  std::optional<unsigned> old_cpus;
  std::optional<unsigned> new_cpus;
  std::optional<std::uint64_t> old_disk_bytes;
  std::optional<std::uint64_t> new_disk_bytes;
};

struct RemoveResult {
  std::vector<std::string> deleted;
  std::vector<std::string> failed;  ///< Missing or not deletable (exe.dev still answers 200).
};

/// One SSH key of the account, as `whoami` lists it.
struct AccountKey {
  std::string public_key;   ///< `<type> <base64>`
  std::string fingerprint;  ///< `SHA256:<base64 without padding>`, as ssh-keygen -l prints it
  std::string name;         ///< may be empty
};

struct WhoAmI {
  std::string email;
  std::string region;
  /// The account's SSH keys (registered with `ssh-key add` and API keys). A tag-scoped token
  /// sees only the keys of its tag, so an empty list does not mean the account has none.
  std::vector<AccountKey> ssh_keys;
};

/// The raw answer to one /exec request.
struct ExecResponse {
  unsigned status = 0;
  std::string body;
  /// An `ssh` answer's exit code from its X-Exe-Exit trailer; nullopt without one (a proxy
  /// stripped it, the stream was cut, or the command was not ssh).
  std::optional<int> exit_code;
};

}  // namespace exedev
