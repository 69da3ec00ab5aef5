#pragma once
// VMSpec: what VM to make, validated when built, with no I/O.
//
// A VMSpec describes a new VM made from an image, or a copy of a base VM:
//
//   VMSpec spec({.name = "build-42", .tags = {"req-7f3a"}, .image = "ubuntu:24.04",
//                .working_dir = "app"});
//
// The constructor checks every field with exe.dev's own rules and every combination exe.dev
// can't apply, and throws std::invalid_argument naming the field; nothing is silently dropped.
// A VMSpec can't be changed after it is built, so an invalid one can't be used.
//
//                         new VM (image)                copy (base)
//   name, cpu, memory,    in the create request         in the copy request
//   disk, egress,
//   standalone
//   tags, comment         in the create request         set right after the copy
//   image                 yes                           refused: a copy keeps its base's disk
//   integrations          yes                           refused: exe.dev's copy can't attach them
//   copy_base_tags        refused                       whether the copy gets the base's tags
//                                                       (default: yes)
//   working_dir           created after the VM is ready created after the VM is ready

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/coawait_guard.hpp>

namespace exedev {

/// What a VM may reach on the network.
enum class Egress {
  all,           ///< The internet.
  integrations,  ///< Only exe.dev integrations.
};

/// "all" or "integrations".
[[nodiscard]] std::string_view to_string(Egress egress);

/// The fields of a VMSpec, for designated initializers. Every field is optional.
struct VMSpecFields {
  /// 5-52 characters, ^[a-z][a-z0-9]*(-[a-z0-9]+)*$, not reserved; exe.dev generates one if unset.
  std::optional<std::string> name{};
  /// At most 200 bytes of UTF-8 on one line, without exe.dev's forbidden characters.
  std::optional<std::string> comment{};
  /// Each ^[a-z][a-z0-9_-]*$, no duplicates.
  std::vector<std::string> tags{};
  /// The image of a new VM (exe.dev's default when unset).
  std::optional<std::string> image{};
  /// The VM to copy (a VM name); the copy keeps its base's disk.
  std::optional<std::string> base{};
  std::optional<unsigned> cpu{};
  /// Sizes as exe.dev parses them: N (GiB) or N followed by B, K, KB, KiB, M, MB, MiB, G, GB,
  /// GiB, T, TB or TiB (any case, decimals allowed), e.g. "8G".
  std::optional<std::string> memory{};
  std::optional<std::string> disk{};
  /// A copy's egress defaults to its base's.
  std::optional<Egress> egress{};
  /// Reserved capacity (needs a plan with it).
  bool standalone = false;
  /// New VMs only.
  std::vector<std::string> integrations{};
  /// Copies only: whether the copy gets the base's tags (default: yes).
  std::optional<bool> copy_base_tags{};
  /// Where commands start: absolute, or relative to the VM user's home. Made while getting the
  /// VM ready.
  std::optional<std::string> working_dir{};
  EXEDEV_COAWAIT_GUARD;
};

/// A validated VM description. Construction does no I/O.
class VMSpec {
 public:
  /// Validates; throws std::invalid_argument saying which field or combination is wrong.
  explicit VMSpec(VMSpecFields fields);
  /// A VM of exe.dev's defaults. (An overload, not a defaulted argument: ADR 7.)
  explicit VMSpec();

  [[nodiscard]] const VMSpecFields& fields() const noexcept { return fields_; }
  [[nodiscard]] const std::optional<std::string>& name() const noexcept { return fields_.name; }
  [[nodiscard]] const std::optional<std::string>& comment() const noexcept { return fields_.comment; }
  [[nodiscard]] const std::vector<std::string>& tags() const noexcept { return fields_.tags; }
  [[nodiscard]] const std::optional<std::string>& image() const noexcept { return fields_.image; }
  [[nodiscard]] const std::optional<std::string>& base() const noexcept { return fields_.base; }
  [[nodiscard]] std::optional<unsigned> cpu() const noexcept { return fields_.cpu; }
  [[nodiscard]] const std::optional<std::string>& memory() const noexcept { return fields_.memory; }
  [[nodiscard]] const std::optional<std::string>& disk() const noexcept { return fields_.disk; }
  [[nodiscard]] std::optional<Egress> egress() const noexcept { return fields_.egress; }
  [[nodiscard]] bool standalone() const noexcept { return fields_.standalone; }
  [[nodiscard]] const std::vector<std::string>& integrations() const noexcept { return fields_.integrations; }
  [[nodiscard]] const std::optional<std::string>& working_dir() const noexcept { return fields_.working_dir; }

  /// Whether this spec copies a base VM.
  [[nodiscard]] bool is_copy() const noexcept { return fields_.base.has_value(); }
  /// For a copy: whether it gets its base's tags (true unless copy_base_tags is false).
  [[nodiscard]] bool copy_base_tags() const noexcept { return fields_.copy_base_tags.value_or(true); }

 private:
  VMSpecFields fields_;
};

/// exe.dev's rules, also used for names and tags given to VMs and SandboxBackend. Each throws
/// std::invalid_argument naming `what` (e.g. "name", "scope_tag") when the value is invalid.
void validate_vm_name(std::string_view name, std::string_view what = "VM name");
void validate_tag(std::string_view tag, std::string_view what = "tag");
void validate_comment(std::string_view comment);
void validate_size(std::string_view size, std::string_view what);

}  // namespace exedev
