// The shell filesystem's output parsers on any stdout: a result or DamagedOutputError, never
// a partial result from damaged output, another exception or a crash. The gzip decoder on any
// member: exactly the bytes expected or nothing; and any input round-trips through gzip.
#include "fuzz.hpp"

#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

#include <string>

using exedev::fuzz::require;
using namespace exedev::workspace::detail;

namespace {

template <typename F>
void parse(F f) {
  try {
    f();
  } catch (const DamagedOutputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(exedev::fuzz::bytes(data, size));
  const std::string path = "/w/file";
  parse([&] { (void)parse_stat_output(text, path); });
  parse([&] { (void)parse_size_line(text, path); });
  parse([&] {
    const auto expected = size % 97;
    require(decode_exact(text, expected, path).size() == expected, "decode_exact returns exactly the bytes expected");
  });
  parse([&] {
    const auto listing = parse_listing_output(text, path);
    if (!listing.paged) (void)parse_listing_records(listing.records, path);
  });
  parse([&] {
    const auto entries = parse_listing_records(text, path);
    for (std::size_t i = 1; i < entries.size(); ++i) {
      require(entries[i - 1].path <= entries[i].path, "listing records come sorted by path");
    }
  });
  parse([&] {
    const auto expected = size % 97;
    require(decode_page(text, expected, path).size() == expected, "decode_page returns exactly the bytes expected");
  });
  parse([&] {
    // A read's first script output: the whole file (`bytes`), a first page, or `none`.
    std::string out;
    auto decoder = PageDecoder::after_size_line(out, 64);
    decoder.feed(0, text);
    decoder.finish(path);
    require(decoder.size().has_value(), "a finished first page has a size line");
    const auto file_size = *decoder.size();
    require(out.size() == file_size || out.size() == 64 || (out.empty() && file_size > 64),
            "a first page holds the whole file, one page, or nothing after `none`");
  });
  const auto unpacked = gzip_decompress(text, size % 97);
  require(!unpacked || unpacked->size() == size % 97, "gzip_decompress returns exactly the bytes expected or nothing");
  require(gzip_decompress(gzip_compress(text), text.size()) == text, "gzip members round-trip");
  parse([&] { (void)parse_realpath_output(text, path); });
  parse([&] { (void)parse_write_begin_output(text, path); });
  parse([&] { (void)parse_missing_tools(text); });
  return 0;
}
