#include "workspace/data_codec.hpp"

#include <boost/beast/zlib/deflate_stream.hpp>
#include <boost/beast/zlib/inflate_stream.hpp>
#include <boost/crc.hpp>


#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace exedev::workspace::detail {

namespace {

namespace zlib = boost::beast::zlib;

constexpr int kWindowBits = 15;
constexpr int kMemLevel = 8;
constexpr int kLevel = 6;        // gzip's own default
constexpr int kSampleLevel = 1;  // enough to tell text from noise, and quick
constexpr std::size_t kSampleSlices = 4;
constexpr std::size_t kSliceBytes = kCompressionSampleBytes / kSampleSlices;
// The gzip member's fixed header: magic, deflate, no flags, no time, no extra flags, Unix.
constexpr std::array<unsigned char, 10> kGzipHeader = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
constexpr std::size_t kGzipTrailerBytes = 8;  // CRC-32 and length, little-endian
// How much the output of an inflate grows at a time.
constexpr std::size_t kInflateStepBytes = 1024 * 1024;
// RFC 1952 header flags.
constexpr unsigned kFlagHeaderCrc = 2, kFlagExtra = 4, kFlagName = 8, kFlagComment = 16, kFlagsReserved = 0xe0;

// Beast's zlib errors by value: a program may hold two copies of Beast's zlib category (this
// header-only build, and the one compiled separately for the client's transport), and
// error_code comparisons tell the two apart.
bool is(const boost::system::error_code& ec, zlib::error expected) {
  return ec.value() == static_cast<int>(expected);
}

std::string raw_deflate(std::string_view data, int level) {
  zlib::deflate_stream stream;
  stream.reset(level, kWindowBits, kMemLevel, zlib::Strategy::normal);
  std::string out(stream.upper_bound(data.size()), '\0');
  zlib::z_params zs{};  // avail_out and next_out start at zero: the loop allocates the first step
  zs.next_in = data.data();
  zs.avail_in = data.size();
  zs.next_out = out.data();
  zs.avail_out = out.size();
  boost::system::error_code ec;
  // With upper_bound() bytes of room, one finishing call compresses everything.
  stream.write(zs, zlib::Flush::finish, ec);
  if (!is(ec, zlib::error::end_of_stream)) throw std::logic_error("deflate did not finish in one call: " + ec.message());
  out.resize(zs.total_out);
  return out;
}

std::uint32_t crc32_of(std::string_view data) {
  boost::crc_32_type crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

void append_le32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

std::uint32_t le32_at(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// Where the deflate data of a gzip member starts, past its optional header fields; nullopt for
// a header that is not gzip's or does not fit.
std::optional<std::size_t> deflate_start(std::string_view member) {
  const auto* p = reinterpret_cast<const unsigned char*>(member.data());
  const std::size_t size = member.size();
  if (size < kGzipHeader.size() + kGzipTrailerBytes || p[0] != 0x1f || p[1] != 0x8b || p[2] != 8 ||
      (p[3] & kFlagsReserved) != 0) {
    return std::nullopt;
  }
  const unsigned flags = p[3];
  std::size_t at = kGzipHeader.size();
  if (flags & kFlagExtra) {
    if (at + 2 > size) return std::nullopt;
    at += 2 + (static_cast<std::size_t>(p[at]) | static_cast<std::size_t>(p[at + 1]) << 8);
  }
  for (const unsigned text_field : {kFlagName, kFlagComment}) {
    if ((flags & text_field) == 0) continue;
    const auto end = at < size ? member.find('\0', at) : std::string_view::npos;
    if (end == std::string_view::npos) return std::nullopt;
    at = end + 1;
  }
  if (flags & kFlagHeaderCrc) at += 2;
  if (at + kGzipTrailerBytes > size) return std::nullopt;
  return at;
}

}  // namespace

std::string gzip_compress(std::string_view data) {
  std::string out(kGzipHeader.begin(), kGzipHeader.end());
  out += raw_deflate(data, kLevel);
  append_le32(out, crc32_of(data));
  append_le32(out, static_cast<std::uint32_t>(data.size()));  // RFC 1952: the length modulo 2^32
  return out;
}

std::optional<std::string> gzip_decompress(std::string_view member, std::size_t expected) {
  const auto start = deflate_start(member);
  if (!start) return std::nullopt;
  const std::size_t deflated = member.size() - *start - kGzipTrailerBytes;
  // Up to one byte more than expected, so that a longer stream shows itself instead of stopping
  // at the limit. `expected` may be a size the other end claimed: the output grows with what
  // inflates, a step at a time, never allocated ahead.
  const std::size_t most = expected + (expected < std::numeric_limits<std::size_t>::max() ? 1 : 0);
  std::string out;
  zlib::inflate_stream stream;
  stream.reset(kWindowBits);
  zlib::z_params zs;
  // No room yet: the loop's first step makes some (Beast leaves these two uninitialised).
  zs.next_out = nullptr;
  zs.avail_out = 0;
  zs.next_in = member.data() + *start;
  // No output room yet: the loop grows it before the first write.
  zs.next_out = nullptr;
  zs.avail_out = 0;
  // The trailer is offered too: Beast's inflate reads up to 4 bytes ahead of the final code and
  // only reports the end once it has them. Where the deflate data really ended is worked out below.
  zs.avail_in = deflated + kGzipTrailerBytes;
  zs.next_out = nullptr;
  zs.avail_out = 0;  // the first step below makes room
  for (;;) {
    if (zs.avail_out == 0 && out.size() < most) {
      const std::size_t used = out.size();
      out.resize(used + std::min(kInflateStepBytes, most - used));
      zs.next_out = out.data() + used;
      zs.avail_out = out.size() - used;
    }
    const auto in_before = zs.avail_in;
    const auto out_before = zs.avail_out;
    boost::system::error_code ec;
    stream.write(zs, zlib::Flush::none, ec);
    if (is(ec, zlib::error::end_of_stream)) break;
    if (ec && !is(ec, zlib::error::need_buffers)) return std::nullopt;  // damaged
    const bool room_left = zs.avail_out > 0 || out.size() < most;
    if (zs.avail_in == in_before && zs.avail_out == out_before && room_left) return std::nullopt;  // cut
    if (!room_left) return std::nullopt;  // longer than expected
  }
  // The deflate data must end exactly where the trailer begins. At the end, data_type holds
  // the bits read ahead and not used (below 64: Beast's bit buffer has 32).
  const auto unused_bytes = static_cast<std::size_t>(zs.data_type & 63) / 8;
  if (zs.total_in - unused_bytes != deflated || zs.total_out != expected) return std::nullopt;
  out.resize(expected);
  const auto* trailer = reinterpret_cast<const unsigned char*>(member.data()) + member.size() - kGzipTrailerBytes;
  if (le32_at(trailer) != crc32_of(out) || le32_at(trailer + 4) != static_cast<std::uint32_t>(expected)) {
    return std::nullopt;
  }
  return out;
}

bool compresses_well(std::string_view data) {
  std::string sample;
  if (data.size() <= kCompressionSampleBytes) {
    sample = data;
  } else {
    for (std::size_t i = 0; i < kSampleSlices; ++i) {
      sample += data.substr((data.size() - kSliceBytes) / (kSampleSlices - 1) * i, kSliceBytes);
    }
  }
  return compression_pays(sample.size(), raw_deflate(sample, kSampleLevel).size());
}

}  // namespace exedev::workspace::detail
