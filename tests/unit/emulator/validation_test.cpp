#include "emulator/validation.hpp"

#include <catch2/catch.hpp>

using namespace exedev::emulator;

TEST_CASE("VM names", "[validation]") {
  for (const char* good : {"alpha", "my-vm-1", "a1234", "abcde-fghij", "a234567890123456789012345678901234567890123456789012"}) {
    CHECK_FALSE(validate_vm_name(good));
  }
  for (const char* bad : {"abcd", "Alpha", "1alpha", "al--pha", "alpha-", "al_pha",
                          "a2345678901234567890123456789012345678901234567890123"}) {
    const auto message = validate_vm_name(bad);
    REQUIRE(message);
    CHECK(message->rfind("invalid VM name, must be 5-52 characters: ", 0) == 0);
  }
  for (const char* reserved : {"web-p8080", "web-port80", "port8080", "na123"}) {
    const auto message = validate_vm_name(reserved);
    REQUIRE(message);
    CHECK(message->find("reserved") != std::string::npos);
  }
}

TEST_CASE("tags", "[validation]") {
  CHECK(is_valid_tag("agents"));
  CHECK(is_valid_tag("a_b-c9"));
  CHECK_FALSE(is_valid_tag("Agents"));
  CHECK_FALSE(is_valid_tag("9a"));
  CHECK_FALSE(is_valid_tag(""));
  CHECK(validate_tag("x y") == "invalid tag \"x y\": tags must match ^[a-z][a-z0-9_-]*$");
}

TEST_CASE("comments", "[validation]") {
  CHECK_FALSE(validate_comment("hello world, café"));
  CHECK_FALSE(validate_comment(""));
  CHECK(validate_comment(std::string(201, 'a')) == "comment must be at most 200 bytes");
  CHECK_FALSE(validate_comment(std::string(200, 'a')));
  CHECK(validate_comment("a\xff") == "comment must be valid UTF-8");
  CHECK(validate_comment("a\tb") == "comment must not contain tabs or line breaks");
  CHECK(validate_comment("a\nb") == "comment must not contain tabs or line breaks");
  CHECK(validate_comment("a\x01" "b") == "comment must not contain control characters");
  CHECK(validate_comment("a\u200bb") == "comment must not contain bidirectional or zero-width characters");
  CHECK(validate_comment("a\u202eb") == "comment must not contain bidirectional or zero-width characters");
  for (const char* c : {"<", ">", "&", "\"", "'", "`"}) {
    CHECK(validate_comment(std::string("x") + c) == "comment must not contain any of < > & \" ' `");
  }
}

TEST_CASE("sizes are powers of 1024, GiB by default", "[validation]") {
  constexpr std::uint64_t gib = 1024ull * 1024 * 1024;
  CHECK(parse_size("8") == 8 * gib);
  CHECK(parse_size("8GB") == 8 * gib);
  CHECK(parse_size("8gib") == 8 * gib);
  CHECK(parse_size("512m") == 512ull * 1024 * 1024);
  CHECK(parse_size("1.5G") == gib * 3 / 2);
  CHECK(parse_size("2T") == 2 * 1024 * gib);
  CHECK(parse_size("100B") == 100u);
  CHECK(parse_size("1k") == 1024u);
  CHECK_FALSE(parse_size("GB"));
  CHECK_FALSE(parse_size("8XB"));
  CHECK_FALSE(parse_size("1.2.3"));
}

TEST_CASE("--exp durations", "[validation]") {
  using std::chrono::seconds;
  CHECK(parse_expiry("30d").duration == seconds(30 * 86400));
  CHECK(parse_expiry("2h").duration == seconds(7200));
  CHECK(parse_expiry("1w").duration == seconds(7 * 86400));
  CHECK(parse_expiry("1m").duration == seconds(30 * 86400));
  CHECK(parse_expiry("1y").duration == seconds(365 * 86400));
  CHECK(parse_expiry("never").ok);
  CHECK_FALSE(parse_expiry("never").duration);
  CHECK_FALSE(parse_expiry("30x").ok);
  CHECK_FALSE(parse_expiry("d").ok);
  CHECK_FALSE(parse_expiry("0d").ok);
}
