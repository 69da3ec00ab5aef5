#include "common/random_ids.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <thread>

using namespace exedev::detail;

TEST_CASE("random_hex gives two lowercase hex digits per byte, never the same twice", "[unit][common]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto id = random_hex(16);
    CHECK(id.size() == 32);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
  CHECK(random_hex(0).empty());
  const auto secret = secret_hex(16);
  CHECK(secret.size() == 32);
  CHECK(secret.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(secret != secret_hex(16));
}

TEST_CASE("random_chars draws from the whole alphabet and nothing else", "[unit][common]") {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const auto text = random_chars(alphabet, 10000);
  CHECK(text.size() == 10000);
  CHECK(text.find_first_not_of(alphabet) == std::string::npos);
  CHECK(std::set<char>(text.begin(), text.end()).size() == alphabet.size());
  CHECK(random_chars("x", 3) == "xxx");
}

TEST_CASE("each thread has its own differently seeded generator", "[unit][common]") {
  std::string here = random_hex(16);
  std::string there;
  std::thread([&] { there = random_hex(16); }).join();
  CHECK(here != there);
}
