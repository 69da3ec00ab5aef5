#include "common/ssh_wire.hpp"

namespace exedev::detail {

std::optional<std::uint32_t> WireReader::uint32() {
  if (bytes_.size() < 4) return std::nullopt;
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes_[static_cast<std::size_t>(i)]);
  bytes_.remove_prefix(4);
  return value;
}

std::optional<std::uint8_t> WireReader::byte() {
  if (bytes_.empty()) return std::nullopt;
  const auto value = static_cast<std::uint8_t>(bytes_.front());
  bytes_.remove_prefix(1);
  return value;
}

std::optional<std::string_view> WireReader::string() {
  const auto saved = bytes_;
  const auto length = uint32();
  if (!length || *length > bytes_.size()) {
    bytes_ = saved;
    return std::nullopt;
  }
  const auto out = bytes_.substr(0, *length);
  bytes_.remove_prefix(*length);
  return out;
}

bool WireReader::skip(std::size_t count) {
  if (count > bytes_.size()) return false;
  bytes_.remove_prefix(count);
  return true;
}

WireWriter& WireWriter::uint32(std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes_ += static_cast<char>((value >> shift) & 0xFF);
  return *this;
}

WireWriter& WireWriter::byte(std::uint8_t value) {
  bytes_ += static_cast<char>(value);
  return *this;
}

WireWriter& WireWriter::string(std::string_view bytes) {
  uint32(static_cast<std::uint32_t>(bytes.size()));
  bytes_.append(bytes);
  return *this;
}

WireWriter& WireWriter::mpint(std::string_view magnitude) {
  while (!magnitude.empty() && magnitude.front() == '\0') magnitude.remove_prefix(1);
  const bool top_bit = !magnitude.empty() && (static_cast<unsigned char>(magnitude.front()) & 0x80) != 0;
  uint32(static_cast<std::uint32_t>(magnitude.size() + (top_bit ? 1 : 0)));
  if (top_bit) bytes_ += '\0';
  bytes_.append(magnitude);
  return *this;
}

WireWriter& WireWriter::raw(std::string_view bytes) {
  bytes_.append(bytes);
  return *this;
}

}  // namespace exedev::detail
