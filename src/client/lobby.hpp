#pragma once
// Building lobby command lines (the body of POST /exec), sans-IO.
//
// Every word is single-quoted for the lobby lexer (exedev-api.md §1.2) and every flag is sent as
// `--flag=value`, so the flag pre-parser (§1.3) can never take a following word as a value.

#include <exedev/client.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

/// The largest body /exec accepts (64 KiB); longer ones are refused before sending.
inline constexpr std::size_t max_request_body = 64 * 1024;

/// One lobby command line under construction.
class LobbyLine {
 public:
  explicit LobbyLine(std::string command);
  /// A positional word (a VM name, a tag, a pattern). `what` names it in errors.
  LobbyLine& word(std::string_view value, std::string_view what);
  /// `--name=value`.
  LobbyLine& flag(std::string_view name, std::string_view value);
  /// The finished line. Positional words that start with `-` are put after `--`, so the flag
  /// pre-parser leaves them alone.
  [[nodiscard]] std::string str() const;
  /// The command's name (e.g. "tag"), for error messages.
  [[nodiscard]] const std::string& command() const noexcept { return command_; }

 private:
  std::string command_;
  std::vector<std::string> head_;  ///< Subcommand words and flags (already quoted).
  std::vector<std::string> words_;  ///< Positional words (already quoted).
  bool dash_word_ = false;
};

/// Throws BadRequestError (413, checked locally: nothing was sent) when a body is too long.
void check_body_size(std::size_t size, std::string_view command);

/// The first word of a command line as the lobby lexer would see it (for error messages and
/// the retry policy). Empty when the line has none.
[[nodiscard]] std::string command_name(std::string_view command_line);

[[nodiscard]] LobbyLine new_vm_line(const NewVMOptions& options);
[[nodiscard]] LobbyLine copy_vm_line(const CopyVMOptions& options);
[[nodiscard]] LobbyLine list_vms_line(const std::vector<std::string>& patterns);
[[nodiscard]] LobbyLine remove_vms_line(const std::vector<std::string>& names);
/// `pause`, `resume`, `restart`: one VM.
[[nodiscard]] LobbyLine vm_line(std::string command, std::string_view vm);
[[nodiscard]] LobbyLine tag_line(std::string_view vm, const std::vector<std::string>& tags, bool remove);
/// `resize <vm> --memory= --cpu= --disk=` (std::invalid_argument when none is set).
[[nodiscard]] LobbyLine resize_vm_line(std::string_view vm, const ResizeVMOptions& options);
/// `rename <vm> <new name>`.
[[nodiscard]] LobbyLine rename_vm_line(std::string_view vm, std::string_view new_name);
/// `share <subcommand> <vm> [words...]` (subcommand "show", "port", "access allow", ...).
[[nodiscard]] LobbyLine share_line(std::string_view subcommand, std::string_view vm, const std::vector<std::string>& words);
/// `comment <vm> <text>`; an empty text clears the comment (sent as ' ', which the server trims).
[[nodiscard]] LobbyLine comment_line(std::string_view vm, std::string_view text);

}  // namespace exedev::detail
