#pragma once
// The SSH wire encoding (RFC 4251 §5): big-endian uint32, length-prefixed strings, mpints. Used by
// the SSH layer (key formats, SSHSIG, the agent protocol) and the emulator (exe0 tokens' SSHSIG).
// Internal, sans-IO.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

/// Reads from a view it does not own; every read fails (nullopt / false) rather than read past
/// the end, and a length field is never trusted beyond the bytes present.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  std::optional<std::uint32_t> uint32();
  std::optional<std::uint8_t> byte();
  std::optional<std::string_view> string();
  bool skip(std::size_t count);
  /// The bytes not read yet.
  [[nodiscard]] std::string_view rest() const { return bytes_; }
  [[nodiscard]] bool empty() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

/// Appends to a string it owns.
class WireWriter {
 public:
  WireWriter& uint32(std::uint32_t value);
  WireWriter& byte(std::uint8_t value);
  WireWriter& string(std::string_view bytes);
  /// An mpint from a non-negative big-endian magnitude: leading zero bytes dropped, one zero
  /// byte prepended when the top bit is set.
  WireWriter& mpint(std::string_view magnitude);
  /// Bytes as they are, without a length.
  WireWriter& raw(std::string_view bytes);
  [[nodiscard]] const std::string& bytes() const& { return bytes_; }
  [[nodiscard]] std::string bytes() && { return std::move(bytes_); }

 private:
  std::string bytes_;
};

}  // namespace exedev::detail
