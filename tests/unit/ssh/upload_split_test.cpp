// When an SFTP upload goes in two halves (src/ssh/upload_split.hpp), size by size.
#include "ssh/upload_split.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using exedev::ssh::sftp_write_window;
using exedev::ssh::upload_split;

TEST_CASE("upload split: only past two write windows, at the half") {
  struct Row {
    std::string name;
    std::size_t size;
    std::optional<std::size_t> near_size;  // none: whole on one session
  };
  const std::vector<Row> rows{
      {"empty", 0, std::nullopt},
      {"one window", sftp_write_window, std::nullopt},
      {"exactly two windows", 2 * sftp_write_window, std::nullopt},
      {"one byte past two windows", 2 * sftp_write_window + 1, sftp_write_window},
      {"an even size halves exactly", 10 * sftp_write_window, 5 * sftp_write_window},
      {"an odd size leaves the extra byte to the far half", 9 * sftp_write_window + 1, 9 * sftp_write_window / 2},
  };
  for (const auto& row : rows) {
    SECTION(row.name) {
      const auto split = upload_split(row.size);
      REQUIRE(split.has_value() == row.near_size.has_value());
      if (split) CHECK(split->near_size == *row.near_size);
    }
  }
}
