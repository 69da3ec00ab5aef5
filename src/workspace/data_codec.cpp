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
// The most output one inflate step gives (and the inflater's buffer).
constexpr std::size_t kInflateStepBytes = 1024 * 1024;
// The longest gzip header taken (its optional name, comment and extra field are never used).
constexpr std::size_t kMostHeaderBytes = 64 * 1024;
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

// The length of the gzip header at the start of `prefix`: 0 when `prefix` is too short to tell,
// nullopt for a header that is not gzip's or longer than kMostHeaderBytes.
std::optional<std::size_t> header_length(std::string_view prefix) {
  const auto* p = reinterpret_cast<const unsigned char*>(prefix.data());
  const std::size_t size = prefix.size();
  const auto need_more = [&]() -> std::optional<std::size_t> {
    if (size > kMostHeaderBytes) return std::nullopt;
    return 0;
  };
  if (size < kGzipHeader.size()) return need_more();
  if (p[0] != 0x1f || p[1] != 0x8b || p[2] != 8 || (p[3] & kFlagsReserved) != 0) return std::nullopt;
  const unsigned flags = p[3];
  std::size_t at = kGzipHeader.size();
  if (flags & kFlagExtra) {
    if (at + 2 > size) return need_more();
    at += 2 + (static_cast<std::size_t>(p[at]) | static_cast<std::size_t>(p[at + 1]) << 8);
  }
  for (const unsigned text_field : {kFlagName, kFlagComment}) {
    if ((flags & text_field) == 0) continue;
    const auto end = at < size ? prefix.find('\0', at) : std::string_view::npos;
    if (end == std::string_view::npos) return need_more();
    at = end + 1;
  }
  if (flags & kFlagHeaderCrc) at += 2;
  if (at > size) return need_more();
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

struct GzipInflater::State {
  std::uint64_t compressed;
  std::uint64_t expected;
  Sink out;
  std::uint64_t fed = 0;
  std::string header;  // the first bytes, until the header is whole
  std::optional<std::size_t> header_bytes;
  zlib::inflate_stream stream;
  zlib::z_params zs;
  std::string buffer;
  bool ended = false;
  std::uint64_t deflate_end = 0;  // where the deflate data ended, once it has
  std::string trailer;            // the member's last kGzipTrailerBytes bytes
  boost::crc_32_type crc;

  bool inflate(std::string_view input) {
    if (ended) return true;  // the trailer, or bytes past it that finish() refuses
    zs.next_in = input.data();
    zs.avail_in = input.size();
    for (;;) {
      zs.next_out = buffer.data();
      zs.avail_out = buffer.size();
      const auto in_before = zs.avail_in;
      boost::system::error_code ec;
      stream.write(zs, zlib::Flush::none, ec);
      const std::size_t produced = buffer.size() - zs.avail_out;
      if (zs.total_out > expected) return false;  // longer than expected
      if (produced > 0) {
        crc.process_bytes(buffer.data(), produced);
        out(std::string_view(buffer.data(), produced));
      }
      if (is(ec, zlib::error::end_of_stream)) {
        // At the end, data_type holds the bits read ahead and not used (below 64: Beast's bit
        // buffer has 32).
        ended = true;
        deflate_end = *header_bytes + zs.total_in - static_cast<std::size_t>(zs.data_type & 63) / 8;
        return true;
      }
      if (ec && !is(ec, zlib::error::need_buffers)) return false;  // damaged
      if (zs.avail_in == 0 && produced < buffer.size()) return true;  // wants more input
      if (zs.avail_in == in_before && produced == 0) return false;    // stuck
    }
  }
};

GzipInflater::GzipInflater(std::uint64_t compressed, std::uint64_t expected, Sink out)
    : state_(std::make_unique<State>()) {
  state_->compressed = compressed;
  state_->expected = expected;
  state_->out = std::move(out);
  state_->stream.reset(kWindowBits);
  // Room for one more byte than expected, so that a longer stream shows itself.
  state_->buffer.resize(expected < kInflateStepBytes ? static_cast<std::size_t>(expected) + 1 : kInflateStepBytes);
}

GzipInflater::~GzipInflater() = default;

bool GzipInflater::feed(std::string_view piece) {
  State& s = *state_;
  if (piece.size() > s.compressed - s.fed) return false;
  // The trailer: the member's last bytes, whichever pieces bring them.
  const std::uint64_t trailer_at = s.compressed - std::min<std::uint64_t>(s.compressed, kGzipTrailerBytes);
  if (s.fed + piece.size() > trailer_at) {
    const std::uint64_t skip = trailer_at > s.fed ? trailer_at - s.fed : 0;
    s.trailer.append(piece.substr(static_cast<std::size_t>(skip)));
  }
  s.fed += piece.size();
  if (!s.header_bytes) {
    s.header.append(piece);
    const auto length = header_length(s.header);
    if (!length) return false;
    if (*length == 0) return true;
    s.header_bytes = *length;
    std::string rest = s.header.substr(*length);
    s.header.clear();
    s.header.shrink_to_fit();
    return s.inflate(rest);
  }
  // The trailer is offered to the inflater too: Beast's inflate reads up to 4 bytes ahead of the
  // final code and only reports the end once it has them. Where the deflate data really ended is
  // worked out from what it did not use.
  return s.inflate(piece);
}

bool GzipInflater::finish() {
  const State& s = *state_;
  if (s.fed != s.compressed || !s.ended || s.trailer.size() != kGzipTrailerBytes) return false;
  if (s.deflate_end + kGzipTrailerBytes != s.compressed || s.zs.total_out != s.expected) return false;
  const auto* trailer = reinterpret_cast<const unsigned char*>(s.trailer.data());
  return le32_at(trailer) == s.crc.checksum() && le32_at(trailer + 4) == static_cast<std::uint32_t>(s.expected);
}

std::optional<std::string> gzip_decompress(std::string_view member, std::size_t expected) {
  std::string out;
  GzipInflater inflater(member.size(), expected, [&out](std::string_view piece) { out.append(piece); });
  if (!inflater.feed(member) || !inflater.finish()) return std::nullopt;
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
