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

/// Whether `data` is worth sending compressed: slices spread over it (kCompressionSampleBytes
/// in all) deflate to at most 90 % of their size (compression_pays). Random bytes never do.
[[nodiscard]] bool compresses_well(std::string_view data);

using exedev::detail::sha256_hex;  // common/sha256.hpp: the transfer checks' digest

}  // namespace exedev::workspace::detail
