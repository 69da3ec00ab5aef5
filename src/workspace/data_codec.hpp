#pragma once
// How the shell-derived filesystem packs file data for the trip (internal, sans-IO): gzip
// (RFC 1952) for data that compresses, so that it takes fewer requests, and SHA-256 so that the
// environment can check what arrived before it replaces a file.
//
// gzip is built on Boost.Beast's port of zlib (raw deflate) with the RFC 1952 frame around it,
// so the library needs nothing beyond Boost and OpenSSL; the environment's own `gzip` reads and
// writes the other end.

#include "common/sha256.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::workspace::detail {

/// Compression pays when the compressed form is at most this many tenths of the raw size.
inline constexpr std::size_t kCompressedTenthsAtMost = 9;
/// Bytes of data sampled to decide whether compression pays.
inline constexpr std::size_t kCompressionSampleBytes = 64 * 1024;

[[nodiscard]] constexpr bool compression_pays(std::size_t raw_bytes, std::size_t compressed_bytes) {
  return raw_bytes > 0 && compressed_bytes * 10 <= raw_bytes * kCompressedTenthsAtMost;
}

/// One gzip member holding `data` (what `gzip -c` writes).
[[nodiscard]] std::string gzip_compress(std::string_view data);

/// The data in `member`, which must be exactly one gzip member whose CRC-32 and length match
/// and whose data is `expected` bytes long. nullopt for anything else: a damaged or cut stream,
/// bytes after the member, or a different length. Never decodes more than `expected` bytes.
[[nodiscard]] std::optional<std::string> gzip_decompress(std::string_view member, std::size_t expected);

/// Inflates one gzip member that arrives in pieces, as gzip_decompress does a whole one: the
/// member is `compressed` bytes long and holds `expected` bytes of data. The data goes to `out`
/// as it inflates, in pieces of at most 1 MiB; neither size allocates anything (either may be a
/// size the other end claimed).
class GzipInflater {
 public:
  using Sink = std::function<void(std::string_view)>;
  GzipInflater(std::uint64_t compressed, std::uint64_t expected, Sink out);
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  /// The member's next bytes. False once the member shows itself damaged: a header that is not
  /// gzip's, a bad deflate stream, more bytes than `compressed` or more data than `expected`.
  [[nodiscard]] bool feed(std::string_view piece);
  /// After the last piece: whether the member was exactly `compressed` bytes, its deflate data
  /// ended where its trailer starts, and the data was `expected` bytes with the trailer's CRC-32.
  [[nodiscard]] bool finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Whether `data` is worth sending compressed: slices spread over it (kCompressionSampleBytes
/// in all) deflate to at most 90 % of their size (compression_pays). Random bytes never do.
[[nodiscard]] bool compresses_well(std::string_view data);

using exedev::detail::sha256_hex;  // common/sha256.hpp: the transfer checks' digest

}  // namespace exedev::workspace::detail
