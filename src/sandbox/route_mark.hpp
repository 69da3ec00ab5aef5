#pragma once
// The route mark: how a SandboxBackend proves that an SSH connection landed on the VM it names
// (issue: exe.dev's SSH front accepts every key and lets the key decide where the connection
// lands: the lobby's registration shell, or another account's VM). Sans-IO.
//
// Once per attach, one /exec request (`ssh <vm> …`, which exe.dev routes by the token's account
// and the VM's name) runs route_mark_script: it makes the VM's mark when it has none, or one
// naming another VM (a `cp` copies the file), and prints it. Every new SSH connection then runs
// route_mark_probe before any of the caller's work; only the named VM prints the same mark.

#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

/// The script for `/exec` that makes or reads VM `vm_name`'s mark and prints
/// `exedev-route <vm_name> <32 hex digits>`. Throws std::invalid_argument for an empty name.
[[nodiscard]] std::string route_mark_script(const std::string& vm_name);

/// The command an SSH connection runs first: prints the stored mark the same way, or
/// `exedev-route none` when the VM has none.
[[nodiscard]] std::string_view route_mark_probe();

/// The mark in either program's output (`<vm_name> <32 hex digits>`), or nullopt when the
/// output holds none for `vm_name` (the lobby's text, another VM's mark, no mark, noise). Reads
/// at most the first 4 KiB: the output comes from a VM.
[[nodiscard]] std::optional<std::string> parse_route_mark(std::string_view output, std::string_view vm_name);

/// What a probe's output says: the VM's mark (compare it with the one /exec printed), or, for
/// the error message, the registration text of exe.dev's lobby shell, a mark of another VM, no
/// mark at all, or nothing recognisable.
struct ProbeReading {
  enum class Answer { mark, lobby_shell, other_vm, no_mark, unrecognised };
  Answer answer = Answer::unrecognised;
  std::string mark;  ///< for Answer::mark
};
[[nodiscard]] ProbeReading read_probe_output(std::string_view output, std::string_view vm_name);

}  // namespace exedev::detail
