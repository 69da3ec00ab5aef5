#pragma once
// The flags of the Client's VM commands that take options: new, cp and resize.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>

namespace exedev {

/// `new` flags; each is sent as `--flag=value` only when set.
struct NewVMOptions {
  std::optional<std::string> name{};
  std::optional<std::string> image{};
  std::optional<unsigned> cpu{};
  std::optional<std::string> memory{};  ///< e.g. "8G".
  std::optional<std::string> disk{};
  std::vector<std::string> tags{};      ///< One `--tag=` each.
  std::optional<std::string> comment{}; ///< An empty comment is not sent.
  std::map<std::string, std::string> env{};  ///< VM-level environment (`--env=K=V`); values never appear in errors.
  std::vector<std::string> integrations{};
  /// `--egress=<value>` ("all" or "integrations"). exe.dev does not document this flag yet;
  /// the name is this library's choice.
  std::optional<std::string> egress{};
  bool standalone = false;  ///< `--standalone=true`.
  EXEDEV_COAWAIT_GUARD;
};

/// `cp <source> [name]` flags.
struct CopyVMOptions {
  std::string source{};
  std::optional<std::string> name{};
  bool copy_tags = true;  ///< false sends `--copy-tags=false`.
  std::optional<unsigned> cpu{};
  std::optional<std::string> memory{};
  std::optional<std::string> disk{};
  std::optional<std::string> egress{};
  bool standalone = false;
  EXEDEV_COAWAIT_GUARD;
};

/// `resize` flags; at least one must be set. Sizes as for `new` (e.g. "16G"; a plain number is
/// GiB). The disk only grows (exe.dev refuses a smaller or equal size, and growth over 250 GiB at
/// once). A memory or CPU change takes effect when the VM restarts.
struct ResizeVMOptions {
  std::optional<std::string> memory{};
  std::optional<unsigned> cpu{};
  std::optional<std::string> disk{};  ///< The new total size.
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev
