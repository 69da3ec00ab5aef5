#pragma once
// Helpers for the workspace tests: temp directories and error capture for coroutines.

#include <boost/asio/awaitable.hpp>
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>
#include <unistd.h>

#include <exedev/testing/co_check.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev::test {

/// An argv command from its items.
template <typename... Items>
workspace::Command cmd(Items... items) {
  return workspace::Command::argv({std::string(items)...});
}

/// Options that set nothing, for a backend's run(). Returned from a function so that no options
/// temporary is built inside the caller's co_await (GCC 12 miscompiles one; ADR 7).
inline workspace::RunOptions no_options() { return {}; }

/// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "exedev-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp");
    path_ = std::filesystem::canonical(pattern).string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// The error code of the filesystem_error `op` throws; an empty code if it throws nothing.
template <typename T>
boost::asio::awaitable<std::error_code> errc_of(boost::asio::awaitable<T> op) {
  try {
    co_await std::move(op);
  } catch (const std::filesystem::filesystem_error& e) {
    co_return e.code();
  }
  co_return std::error_code();
}

/// The message of the E that `op` throws; nullopt if it throws nothing (other types propagate).
template <typename E, typename T>
boost::asio::awaitable<std::optional<std::string>> error_of(boost::asio::awaitable<T> op) {
  try {
    co_await std::move(op);
  } catch (const E& e) {
    co_return std::string(e.what());
  }
  co_return std::nullopt;
}

// Whether a [permissions] case skips: root bypasses file permissions (CAP_DAC_OVERRIDE), unless
// tests/run_permission_checks.sh runs it, which drops that capability (or keeps it to show the
// case fails) and sets EXEDEV_PERMISSION_CHECKS=required.
inline bool skip_permission_checks() {
  const char* required = std::getenv("EXEDEV_PERMISSION_CHECKS");
  return ::geteuid() == 0 && (required == nullptr || std::string_view(required) != "required");
}

// `size` bytes of every value, the same for the same seed: data that does not compress.
inline std::string random_bytes(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 engine{seed};
  std::string data(size, '\0');
  for (auto& c : data) c = static_cast<char>(engine() & 0xFF);
  return data;
}

}  // namespace exedev::test
