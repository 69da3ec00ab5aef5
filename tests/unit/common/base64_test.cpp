#include "common/base64.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using exedev::detail::base64_decode;
using exedev::detail::base64_encode;
using exedev::detail::base64url_decode;
using exedev::detail::base64url_encode;

TEST_CASE("base64 round-trips every byte value at every length remainder", "[unit][common]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); ++n) {
    const auto text = base64_encode(all.substr(0, n));
    CHECK(text.size() == (n + 2) / 3 * 4);
    CHECK(base64_decode(text) == all.substr(0, n));
  }
}

TEST_CASE("base64 encodes the RFC 4648 test vectors", "[unit][common]") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == std::string(plain));
  }
  CHECK(base64_encode(std::string("\xFB\xFF", 2)) == "+/8=");
}

TEST_CASE("base64 decoding skips line breaks, as the base64 tool wraps its output", "[unit][common]") {
  CHECK(base64_decode("YWJj\nZGVm\n") == std::string("abcdef"));
  CHECK(base64_decode("YWI=\r\n") == std::string("ab"));
  CHECK(base64_decode("\n") == std::string());
}

TEST_CASE("base64 decoding refuses anything that is not complete, well-padded base64", "[unit][common]") {
  for (const char* bad : {"Zg=", "YWJ", "Z", "Z#==", "YW@j", "=YWJ", "Zg==Zg==", "Zg===", "Z===", "YWJj=", "YW=j",
                          "YWJj YWJj", "YWJj\t", "YQ=\n=Q", "====", "Y==="}) {
    INFO(bad);
    CHECK_FALSE(base64_decode(bad).has_value());
  }
}

TEST_CASE("base64 decoding in pieces gives base64_decode's answer, however the text is split", "[unit][common]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  std::vector<std::string> texts = {"YWJj\nZGVm\n", "YWI=\r\n", "\n", "", base64_encode(all), base64_encode(all.substr(1)),
                                    base64_encode(all.substr(2))};
  for (const char* bad : {"Zg=", "YWJ", "Z", "Z#==", "YW@j", "=YWJ", "Zg==Zg==", "Zg===", "Z===", "YWJj=", "YW=j",
                          "YWJj YWJj", "YQ=\n=Q", "====", "Y==="}) {
    texts.emplace_back(bad);
  }
  for (const auto& text : texts) {
    const auto whole = base64_decode(text);
    // Every split into two pieces, and into pieces of every fixed size.
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      INFO(text << " cut at " << cut);
      exedev::detail::Base64Decoder decoder;
      std::string out;
      const bool ok = decoder.feed(text.substr(0, cut), out) && decoder.feed(text.substr(cut), out) && decoder.finish(out);
      CHECK(ok == whole.has_value());
      if (ok && whole) CHECK(out == *whole);
    }
    for (std::size_t piece = 1; piece <= 5; ++piece) {
      INFO(text << " in pieces of " << piece);
      exedev::detail::Base64Decoder decoder;
      std::string out;
      bool ok = true;
      for (std::size_t at = 0; ok && at < text.size(); at += piece) ok = decoder.feed(text.substr(at, piece), out);
      ok = ok && decoder.finish(out);
      CHECK(ok == whole.has_value());
      if (ok && whole) CHECK(out == *whole);
    }
  }
}

TEST_CASE("base64url: the URL alphabet without padding, as Go's RawURLEncoding", "[unit][common]") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},       {"f", "Zg"},         {"fo", "Zm8"},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64url_encode(plain) == encoded);
    CHECK(base64url_decode(encoded) == std::string(plain));
  }
  CHECK(base64url_encode(std::string("\xFB\xFF", 2)) == "-_8");
  CHECK(base64url_decode("-_8") == std::string("\xFB\xFF", 2));
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); ++n) CHECK(base64url_decode(base64url_encode(all.substr(0, n))) == all.substr(0, n));
  CHECK(base64url_decode("Zm9v\nYmE") == std::string("fooba"));
  for (const char* bad : {"Zg==", "Zg=", "+/8", "Z", "Zm9vY", "Zm 9v", "Zm9v#"}) {
    INFO(bad);
    CHECK_FALSE(base64url_decode(bad).has_value());
  }
}
