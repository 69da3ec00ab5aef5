// The shell filesystem's data codecs (sans-IO): gzip members as GNU gzip writes and reads them,
// never a wrong byte from a damaged member, the sample rule for compression, SHA-256, and the
// page format of the read scripts. The environment's own gzip and sha256sum are exercised by
// shell_filesystem_test (locally) and the sandbox transfer tests (through the emulator).
#include <catch2/catch.hpp>

#include "common/base64.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

#include <random>
#include <string>

namespace detail = exedev::workspace::detail;

namespace {

std::string random_bytes(std::size_t size, unsigned seed = 5) {
  std::mt19937_64 engine{seed};
  std::string data(size, '\0');
  for (auto& c : data) c = static_cast<char>(engine() & 0xff);
  return data;
}

std::string text(std::size_t size) {
  std::mt19937_64 engine{9};
  const char* words[] = {"int ", "return ", "value", " = ", "co_await ", "std::string ", ";\n", "if (", ") {\n", "}\n"};
  std::string out;
  while (out.size() < size) out += words[engine() % std::size(words)];
  out.resize(size);
  return out;
}

std::string bytes(std::initializer_list<unsigned char> list) { return std::string(list.begin(), list.end()); }

}  // namespace

TEST_CASE("gzip: members round-trip, and GNU gzip's own members decode", "[unit][workspace]") {
  for (const auto& data : {std::string(), std::string("x"), text(300 * 1024), random_bytes(100 * 1024)}) {
    const auto member = detail::gzip_compress(data);
    CHECK(member.substr(0, 3) == "\x1f\x8b\x08");
    CHECK(detail::gzip_decompress(member, data.size()) == data);
  }
  // Every short length: the deflate data ends at every bit position of its last byte (Beast's
  // inflate reads ahead of it; a member that ended at a byte boundary hid that once).
  for (std::size_t n = 0; n < 600; ++n) {
    const auto short_text = text(n);
    const auto short_noise = random_bytes(n, static_cast<unsigned>(n));
    INFO("length " << n);
    CHECK(detail::gzip_decompress(detail::gzip_compress(short_text), n) == short_text);
    CHECK(detail::gzip_decompress(detail::gzip_compress(short_noise), n) == short_noise);
  }
  // `printf 'hello, gzip\n' | gzip -c`, and `gzip named.txt` (its header carries the name).
  const auto piped = bytes({0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xd7,
                            0x51, 0x48, 0xaf, 0xca, 0x2c, 0xe0, 0x02, 0x00, 0x86, 0x1f, 0x82, 0xa4, 0x0c, 0x00, 0x00, 0x00});
  CHECK(detail::gzip_decompress(piped, 12) == "hello, gzip\n");
  const auto named = bytes({0x1f, 0x8b, 0x08, 0x08, 0x40, 0x6a, 0x11, 0x6b, 0x00, 0x03, 0x6e, 0x61, 0x6d, 0x65,
                            0x64, 0x2e, 0x74, 0x78, 0x74, 0x00, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xd7, 0x51, 0x48,
                            0xaf, 0xca, 0x2c, 0xe0, 0x02, 0x00, 0x86, 0x1f, 0x82, 0xa4, 0x0c, 0x00, 0x00, 0x00});
  CHECK(detail::gzip_decompress(named, 12) == "hello, gzip\n");
}

TEST_CASE("gzip: a damaged, cut, padded or mislabelled member never gives wrong bytes", "[unit][workspace]") {
  const auto data = text(20 * 1024);
  const auto member = detail::gzip_compress(data);
  // Every single-byte change: either refused, or the exact data (header bytes that carry none:
  // time, extra flags, OS; padding bits of the last deflate byte).
  std::size_t refused = 0;
  for (std::size_t at = 0; at < member.size(); ++at) {
    auto damaged = member;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    const auto decoded = detail::gzip_decompress(damaged, data.size());
    INFO("byte " << at);
    CHECK((!decoded || *decoded == data));
    refused += !decoded;
  }
  CHECK(refused + 8 >= member.size());
  for (std::size_t cut = 0; cut < member.size(); cut += 97) {
    CHECK_FALSE(detail::gzip_decompress(member.substr(0, cut), data.size()));
  }
  CHECK_FALSE(detail::gzip_decompress(member.substr(0, member.size() - 1), data.size()));
  CHECK_FALSE(detail::gzip_decompress(member + '\0', data.size()));
  CHECK_FALSE(detail::gzip_decompress(member + member, data.size()));
  CHECK_FALSE(detail::gzip_decompress(member, data.size() - 1));
  CHECK_FALSE(detail::gzip_decompress(member, data.size() + 1));
  CHECK_FALSE(detail::gzip_decompress(data, data.size()));
}

TEST_CASE("compression pays for text, never for random bytes", "[unit][workspace]") {
  CHECK(detail::compresses_well(text(8 * 1024 * 1024)));
  CHECK(detail::compresses_well(text(2000)));
  CHECK_FALSE(detail::compresses_well(random_bytes(8 * 1024 * 1024)));
  CHECK_FALSE(detail::compresses_well(random_bytes(2000)));
  CHECK_FALSE(detail::compresses_well(""));
  // Text in the sampled slices does not make a random file compressible as a whole: the
  // writer checks the whole member too (compression_pays).
  CHECK(detail::compression_pays(100, 90));
  CHECK_FALSE(detail::compression_pays(100, 91));
  CHECK_FALSE(detail::compression_pays(0, 0));
}

TEST_CASE("sha256_hex is sha256sum's digest", "[unit][workspace]") {
  CHECK(detail::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(detail::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("read pages: raw or gzip, exactly the bytes expected", "[unit][workspace]") {
  const std::string path = "/w/f";
  const auto data = text(5000);
  CHECK(detail::decode_page("raw\n" + exedev::detail::base64_encode(data), data.size(), path) == data);
  const auto packed = "gzip\n" + exedev::detail::base64_encode(detail::gzip_compress(data));
  CHECK(detail::decode_page(packed, data.size(), path) == data);
  CHECK_THROWS_AS(detail::decode_page(packed, data.size() - 1, path), detail::DamagedOutputError);
  auto flipped = packed;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
  CHECK_THROWS_AS(detail::decode_page(flipped, data.size(), path), detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::decode_page("zstd\n" + exedev::detail::base64_encode(data), data.size(), path),
                  detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::decode_page(exedev::detail::base64_encode(data), data.size(), path), detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::decode_page("gzip\n" + exedev::detail::base64_encode(data), data.size(), path),
                  detail::DamagedOutputError);
}
