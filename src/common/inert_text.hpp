#pragma once
// Text chosen by a VM (a command's stderr, a file name, an archive member's name) made inert
// before it goes into an error message or a log line: a terminal that shows it runs no escape
// sequence, a log reader sees one line, and its length is bounded. Internal, sans-IO. The raw
// bytes stay where a program can ask for them (the error's payload), never in what().

#include <cstddef>
#include <string>
#include <string_view>

namespace exedev::detail {

/// Bytes of inert text kept by default: enough for a path or a few lines of stderr.
inline constexpr std::size_t kInertTextBytes = 1024;

/// `bytes` as printable text: every C0 control (newline and tab too), DEL, every C1 control
/// (U+0080-U+009F, which some terminals take as CSI) and every byte of invalid UTF-8 written as
/// `\xNN`, a backslash as `\\`; other valid UTF-8 unchanged. At most `max_bytes` of the input
/// are shown (cut at a character's start), then ` ... (<n> more bytes)`.
[[nodiscard]] std::string inert_text(std::string_view bytes, std::size_t max_bytes = kInertTextBytes);

}  // namespace exedev::detail
