#pragma once
// What exe.dev's `share` commands answer: who and what may reach a VM's HTTPS proxy
// (https://<vm>.exe.xyz/), and on which VM port it lands. Shapes from exe.dev's
// execore/ssh_share.go (docs/emulator.md, "share").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace exedev {

/// A person the VM is shared with: "pending" (invited, not yet registered) or "active".
struct ShareUser {
  std::string email;
  std::string status;
  std::string invited_at;  ///< RFC 3339, as sent
};

/// A share link (`share add-link`): anyone with https://<vm>.exe.xyz/?share=<token> gets in.
struct ShareLinkInfo {
  std::string token;
  std::string created_at;  ///< RFC 3339, as sent
  std::int64_t use_count = 0;
  std::optional<std::string> last_used_at;
};

/// A team the VM is shared with.
struct ShareTeam {
  std::string team_id;
  std::string team_name;
};

/// `share show <vm>`.
struct ShareInfo {
  std::string vm_name;
  /// "public" (anyone) or "private" (users with access, share links): the answer's `status`.
  std::string visibility;
  /// The VM port the bare URL serves (the proxy port).
  std::uint16_t port = 0;
  /// https://<vm>.exe.xyz, without a trailing slash.
  std::string url;
  std::vector<ShareUser> users;
  std::vector<ShareLinkInfo> links;
  std::vector<ShareTeam> teams;
  bool team_access = false;  ///< team_ssh and team_shelley both
  bool team_ssh = false;
  bool team_shelley = false;
  bool support_has_root = false;
};

/// The proxy route after `share port`, `share set-public`, `share set-private` or
/// `share access` (only vm_name, port and visibility when `share port <vm>` just reads it).
struct ShareRoute {
  std::string vm_name;
  std::uint16_t port = 0;
  std::string visibility;  ///< "public" or "private"
  bool team_access = false;
  bool team_ssh = false;
  bool team_shelley = false;
};

/// `share add-link <vm>`.
struct ShareLinkCreated {
  std::string vm_name;
  std::string token;
  std::string url;  ///< https://<vm>.exe.xyz/?share=<token>
};

/// `share add`, `share remove`, `share remove-link`: exe.dev's confirmation.
struct ShareChange {
  std::string vm_name;
  std::string shared_with;  ///< `share add <vm> <email>`: the address invited
  std::string team_name;    ///< `share add|remove <vm> team`: the team's display name
  std::string message;      ///< e.g. "Invitation sent", "Share link removed"
};

}  // namespace exedev
