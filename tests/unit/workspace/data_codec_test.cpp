// The shell filesystem's data codecs (sans-IO): gzip members as GNU gzip writes and reads them,
// never a wrong byte from a damaged member, the sample rule for compression, SHA-256, and the
// page format of the read scripts. The environment's own gzip and sha256sum are exercised by
// shell_filesystem_test (locally) and the sandbox transfer tests (through the emulator).
#include <catch2/catch.hpp>

#include "common/base64.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <string_view>

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

TEST_CASE("gzip: an expected size the other end claimed is never allocated ahead", "[unit][workspace]") {
  const auto data = text(3 * 1024 * 1024);  // more than one step of the output's growth
  const auto member = detail::gzip_compress(data);
  CHECK(detail::gzip_decompress(member, data.size()) == data);
  // A terabyte claimed for a 3 MiB member: refused, not a bad_alloc (nor a terabyte zero-filled).
  CHECK_FALSE(detail::gzip_decompress(member, std::size_t{1} << 40));
  CHECK_FALSE(detail::gzip_decompress(member, ~std::size_t{0}));
  CHECK(detail::gzip_decompress(detail::gzip_compress(""), 0) == std::string());
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

namespace {

// Feeds `text` to `decoder` in pieces of `piece` bytes, at their offsets.
void feed_in_pieces(detail::PageDecoder& decoder, const std::string& text, std::size_t piece) {
  for (std::size_t at = 0; at < text.size(); at += piece) decoder.feed(at, std::string_view(text).substr(at, piece));
}

}  // namespace

TEST_CASE("read pages decoded as they arrive: the same bytes however the output is split", "[unit][workspace]") {
  const std::string path = "/w/f";
  const auto data = text(5000);
  const auto raw = "raw\n" + exedev::detail::base64_encode(data) + "\n";
  const auto packed = "gzip\n" + exedev::detail::base64_encode(detail::gzip_compress(data)) + "\n";
  for (const auto* page : {&raw, &packed}) {
    for (const std::size_t piece : {1, 2, 3, 5, 76, 77, 4096}) {
      INFO(page->substr(0, 4) << " in pieces of " << piece);
      std::string out = "before";
      detail::PageDecoder decoder(out, data.size());
      feed_in_pieces(decoder, *page, piece);
      decoder.finish(path);
      CHECK(out == "before" + data);
    }
  }
}

TEST_CASE("read pages decoded as they arrive: a raw page is decoded before its end arrives", "[unit][workspace]") {
  const auto data = random_bytes(1 << 20);
  const auto page = "raw\n" + exedev::detail::base64_encode(data);
  std::string out;
  detail::PageDecoder decoder(out, data.size());
  decoder.feed(0, std::string_view(page).substr(0, page.size() / 2));
  // Half the text is in: about half the page is already bytes, not text.
  CHECK(out.size() > data.size() / 2 - 1024);
  CHECK(out == data.substr(0, out.size()));
  decoder.feed(page.size() / 2, std::string_view(page).substr(page.size() / 2));
  decoder.finish("/w/f");
  CHECK(out == data);
}

TEST_CASE("read pages decoded as they arrive: a script sent again starts the page over", "[unit][workspace]") {
  const auto data = text(3000);
  const auto page = "raw\n" + exedev::detail::base64_encode(data);
  std::string out = "kept";
  detail::PageDecoder decoder(out, data.size());
  decoder.feed(0, std::string_view(page).substr(0, 1000));  // a first answer, lost after 1000 bytes
  feed_in_pieces(decoder, page, 333);                       // the script again, from offset 0
  decoder.finish("/w/f");
  CHECK(out == "kept" + data);
}

TEST_CASE("read pages decoded as they arrive: damage, gaps, short and long pages are refused", "[unit][workspace]") {
  const std::string path = "/w/f";
  const auto data = text(3000);
  const auto raw = "raw\n" + exedev::detail::base64_encode(data);
  const auto refused = [&](const std::string& page, std::size_t expected) {
    std::string out = "kept";
    detail::PageDecoder decoder(out, expected);
    feed_in_pieces(decoder, page, 100);
    CHECK_THROWS_AS(decoder.finish(path), detail::DamagedOutputError);
    CHECK(out == "kept");  // nothing of a refused page stays
  };
  refused(raw, data.size() - 1);
  refused(raw, data.size() + 1);
  refused(raw.substr(0, raw.size() - 4), data.size());
  refused("raw\n%%%%" + raw.substr(4), data.size());
  refused("raw", 0);
  refused("zstd\n" + exedev::detail::base64_encode(data), data.size());
  refused(std::string(100, 'r') + "\n", 0);
  std::string out;
  detail::PageDecoder gap(out, data.size());
  gap.feed(0, std::string_view(raw).substr(0, 100));
  gap.feed(200, std::string_view(raw).substr(200));
  CHECK_THROWS_AS(gap.finish(path), detail::DamagedOutputError);
}

TEST_CASE("read pages decoded as they arrive: the first page follows the file's size line", "[unit][workspace]") {
  const std::string path = "/w/f";
  const auto data = text(3000);
  std::string out;
  auto first = detail::PageDecoder::after_size_line(out, 1024);
  feed_in_pieces(first, "  3000\nraw\n" + exedev::detail::base64_encode(data.substr(0, 1024)) + "\n", 7);
  REQUIRE(first.size() == 3000u);
  first.finish(path);
  CHECK(out == data.substr(0, 1024));

  std::string empty;
  auto nothing = detail::PageDecoder::after_size_line(empty, 1024);
  nothing.feed(0, "0\nraw\n");
  nothing.finish(path);
  CHECK(nothing.size() == 0u);
  CHECK(empty.empty());

  std::string bad;
  auto unsized = detail::PageDecoder::after_size_line(bad, 1024);
  unsized.feed(0, "many\nraw\n");
  CHECK_FALSE(unsized.size().has_value());
  CHECK_THROWS_AS(unsized.finish(path), detail::DamagedOutputError);
}

TEST_CASE("read pages: `bytes` carries the whole file raw, exactly as many bytes as the size line says",
          "[unit][workspace]") {
  const std::string path = "/w/f";
  std::string data = text(5000);
  data[10] = '\0';
  data[20] = '\n';
  data[30] = static_cast<char>(0xff);
  std::string out = "kept";
  auto whole = detail::PageDecoder::after_size_line(out, 1024);  // larger than a page: no matter
  feed_in_pieces(whole, "5000\nbytes\n" + data, 11);
  whole.finish(path);
  CHECK(out == "kept" + data);

  std::string short_out;
  auto cut = detail::PageDecoder::after_size_line(short_out, 1024);
  cut.feed(0, "5000\nbytes\n" + data.substr(0, 4999));
  CHECK_THROWS_AS(cut.finish(path), detail::DamagedOutputError);
  CHECK(short_out.empty());

  std::string long_out;
  auto longer = detail::PageDecoder::after_size_line(long_out, 1024);
  longer.feed(0, "5000\nbytes\n" + data + "x");
  CHECK_THROWS_AS(longer.finish(path), detail::DamagedOutputError);
  CHECK(long_out.empty());

  // Without a size line first (a plain page), `bytes` means nothing.
  std::string plain_out;
  detail::PageDecoder plain(plain_out, 4);
  plain.feed(0, "bytes\nabcd");
  CHECK_THROWS_AS(plain.finish(path), detail::DamagedOutputError);
}

TEST_CASE("read pages: `none` stands for the first page of a file larger than a page, and only there",
          "[unit][workspace]") {
  const std::string path = "/w/f";
  std::string out;
  auto larger = detail::PageDecoder::after_size_line(out, 1024);
  feed_in_pieces(larger, "3000\nnone\n", 3);
  larger.finish(path);  // nothing decoded: the data comes by transfer
  CHECK(larger.size() == 3000u);
  CHECK(out.empty());

  std::string fits;
  auto whole = detail::PageDecoder::after_size_line(fits, 1024);
  whole.feed(0, "1024\nnone\n");  // a file of one page must come with it
  CHECK_THROWS_AS(whole.finish(path), detail::DamagedOutputError);

  std::string trailing;
  auto more = detail::PageDecoder::after_size_line(trailing, 1024);
  more.feed(0, "3000\nnone\nAAAA\n");
  CHECK_THROWS_AS(more.finish(path), detail::DamagedOutputError);
}

namespace {

// What a GzipInflater gives for `member` fed in pieces of `piece` bytes (nullopt when it refuses).
std::optional<std::string> inflate_in_pieces(const std::string& member, std::size_t expected, std::size_t piece) {
  std::string out;
  std::size_t largest_output = 0;
  detail::GzipInflater inflater(member.size(), expected, [&](std::string_view bytes) {
    largest_output = std::max(largest_output, bytes.size());
    out.append(bytes);
  });
  for (std::size_t at = 0; at < member.size(); at += piece) {
    if (!inflater.feed(std::string_view(member).substr(at, piece))) return std::nullopt;
  }
  if (!inflater.finish()) return std::nullopt;
  CHECK(largest_output <= 1024 * 1024);
  return out;
}

}  // namespace

TEST_CASE("gzip: a member fed in pieces inflates as a whole one does, and is refused as one is", "[unit][workspace]") {
  const auto data = text(3 * 1024 * 1024 + 17);  // inflates to more than one output step
  const auto member = detail::gzip_compress(data);
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, member.size()}) {
    INFO("pieces of " << piece);
    if (piece == 1) {
      // Byte by byte over a short member (a long one would take long): the header, the deflate
      // data and the trailer each split everywhere.
      const auto small = text(5000);
      CHECK(inflate_in_pieces(detail::gzip_compress(small), small.size(), 1) == small);
      continue;
    }
    CHECK(inflate_in_pieces(member, data.size(), piece) == data);
  }
  // More data than expected, less, a damaged trailer, a member longer than announced: refused
  // whatever the pieces.
  CHECK_FALSE(inflate_in_pieces(member, data.size() - 1, 4096));
  CHECK_FALSE(inflate_in_pieces(member, data.size() + 1, 4096));
  auto damaged = member;
  damaged[damaged.size() - 6] = static_cast<char>(damaged[damaged.size() - 6] ^ 1);
  CHECK_FALSE(inflate_in_pieces(damaged, data.size(), 4096));
  detail::GzipInflater short_announced(member.size() - 1, data.size(), [](std::string_view) {});
  CHECK_FALSE(short_announced.feed(member));
  // A header whose name field never ends is refused once it is longer than any header taken,
  // not held whole.
  std::string endless_name = bytes({0x1f, 0x8b, 0x08, 0x08, 0, 0, 0, 0, 0, 0x03});
  endless_name += std::string(200 * 1024, 'n');
  detail::GzipInflater name_reader(1024 * 1024 * 1024, 10, [](std::string_view) {});
  bool refused = false;
  for (std::size_t at = 0; at < endless_name.size() && !refused; at += 4096) {
    refused = !name_reader.feed(std::string_view(endless_name).substr(at, 4096));
  }
  CHECK(refused);
}
