#pragma once
// What every extracted docs snippet may assume (tests/docs/CMakeLists.txt): the exedev headers,
// `executor` (the coroutine's executor), the aliases `ws` and `asio`, std::chrono's literals,
// and EXE_BASE_URL / EXE_TOKEN / EXE_CA_FILE pointing at a fresh emulator, so that a default
// exedev::Client (and everything that makes one) reaches it. The working directory is a fresh
// temporary directory.
#include <exedev/exedev.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;

struct Snippet {
  const char* where;  ///< document:line of the block
  exedev::Task<void> (*run)(boost::asio::any_io_executor);
};

extern const std::vector<Snippet> snippets;
