// The shell filesystem's chunk size on SandboxBackend keeps every request under exe.dev's
// 64 KiB body: checked here with the real script builders of the workspace layer and the
// client's own request sizing (script_request_bytes).
#include <catch2/catch.hpp>

#include <exedev/sandbox/sandbox_backend.hpp>

#include <exedev/workspace/types.hpp>

#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

namespace {

// The largest request each write chunk travels in (Client::run_script's lobby line), for a
// file under a path of `path_bytes`.
std::vector<std::size_t> chunk_requests(std::size_t chunk_chars, std::size_t path_bytes) {
  using namespace exedev::workspace::detail;
  const std::string parent = "/" + std::string(path_bytes - 80, 'd');
  const std::string destination = parent + "/weird name.bin";
  const std::string temp = parent + "/.exedev-0123456789abcdef0123456789abcdef.tmp";
  std::vector<std::string> args{std::string(chunk_chars, 'Q')};
  const std::string vm(52, 'v');
  WriteCheck check;
  check.size = 1u << 30;
  check.sha256 = std::string(64, '0');
  std::vector<std::size_t> sizes{exedev::script_request_bytes(vm, write_block_script(temp, chunk_chars / 4 * 3, 1u << 20), args)};
  for (const bool gzip : {false, true}) {
    check.gzip = gzip;
    sizes.push_back(exedev::script_request_bytes(vm, write_whole_script(destination, ".exedev-x.tmp", check), args));
  }
  return sizes;
}

// The stdout of the first-page read script for a file of `bytes` random bytes, run here under
// /bin/sh as the VM runs it.
std::string first_page_output(std::size_t bytes) {
  const auto file = std::filesystem::temp_directory_path() / ("exedev-page-" + std::to_string(::getpid()));
  {
    std::mt19937_64 engine{3};
    std::string data(bytes, '\0');
    for (auto& c : data) c = static_cast<char>(engine() & 0xff);
    std::ofstream(file, std::ios::binary) << data;
  }
  const auto script = exedev::workspace::detail::read_first_page_script(file.string(), bytes, true);
  const auto line = "/bin/sh -c " + exedev::workspace::shell_quote(script);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(line.c_str(), "r"), ::pclose);
  REQUIRE(pipe);
  std::string out;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) out.append(buffer, n);
  std::filesystem::remove(file);
  return out;
}

}  // namespace

TEST_CASE("the write chunk fills exe.dev's request body") {
  const auto limits = exedev::exedev_shell_filesystem_limits({}, std::nullopt);
  CHECK(limits.write_chunk_chars % 4 == 0);
  // About 61,400 characters since the wrapper's first line fixes PATH (common/script_path.hpp).
  CHECK(limits.write_chunk_chars >= 60 * 1000);
  CHECK(limits.read_page_bytes == 4 * 1024 * 1024);
  CHECK(limits.write_window == 4);
  CHECK(limits.compress);
  for (const auto size : chunk_requests(limits.write_chunk_chars, 1024)) {
    CHECK(size < exedev::max_request_body_bytes);
  }
  // The budget is used, not guessed far below it: a chunk 4 KiB larger no longer fits.
  CHECK(chunk_requests(limits.write_chunk_chars + 4096, 1024).back() >= exedev::max_request_body_bytes);
}

TEST_CASE("file transfer options: reference mode and bounds") {
  exedev::FileTransferOptions reference;
  reference.reference_mode = true;
  const auto limits = exedev::exedev_shell_filesystem_limits({}, std::nullopt, reference);
  CHECK(limits.write_window == 1);
  CHECK(limits.read_page_bytes == 64 * 1024);
  CHECK_FALSE(limits.compress);
  exedev::FileTransferOptions off;
  off.compression = false;
  CHECK_FALSE(exedev::exedev_shell_filesystem_limits({}, std::nullopt, off).compress);
  exedev::FileTransferOptions bad;
  bad.write_window = 0;
  CHECK_THROWS_AS(exedev::exedev_shell_filesystem_limits({}, std::nullopt, bad), std::invalid_argument);
  bad = {};
  bad.read_page_bytes = 6 * 1024 * 1024;  // its base64 lines would pass the 8 MiB output cap
  CHECK_THROWS_AS(exedev::exedev_shell_filesystem_limits({}, std::nullopt, bad), std::invalid_argument);
}

TEST_CASE("the largest read page fits the output cap as the VM's base64 prints it") {
  exedev::FileTransferOptions largest;
  largest.read_page_bytes = 5 * 1024 * 1024 + 512 * 1024;
  CHECK_NOTHROW(exedev::exedev_shell_filesystem_limits({}, std::nullopt, largest));
  largest.read_page_bytes += 1;
  CHECK_THROWS_AS(exedev::exedev_shell_filesystem_limits({}, std::nullopt, largest), std::invalid_argument);
  // Random bytes: the page travels raw, in 76-character lines.
  const auto largest_output = first_page_output(5 * 1024 * 1024 + 512 * 1024);
  CHECK(largest_output.size() < exedev::max_command_output_bytes);
  CHECK(first_page_output(6 * 1024 * 1024).size() > exedev::max_command_output_bytes);
}

TEST_CASE("gzip works beside the client's separately compiled Beast") {
  // This binary links the client's transport, which compiles Beast (its zlib too) separately:
  // two copies of Beast's zlib error category, which error_code comparisons tell apart.
  const std::string text(100 * 1024, 'x');
  const auto member = exedev::workspace::detail::gzip_compress(text);
  CHECK(member.size() < 1024);
  CHECK(exedev::workspace::detail::gzip_decompress(member, text.size()) == text);
}

TEST_CASE("an env that leaves no room for file chunks is refused") {
  const exedev::workspace::Env huge{{"BLOB", std::string(40 * 1024, 'x')}};
  CHECK_THROWS_AS(exedev::exedev_shell_filesystem_limits(huge, std::nullopt), std::invalid_argument);
  CHECK_THROWS_AS(exedev::SandboxBackend(std::nullopt, exedev::VMSpec(), std::nullopt, std::nullopt, huge),
                  std::invalid_argument);
}

TEST_CASE("SandboxBackend reports the computed limits and checks its arguments without I/O") {
  const exedev::workspace::Env env{{"MODE", "test"}};
  const exedev::VMSpec spec({.working_dir = "app"});
  exedev::SandboxBackend backend(std::nullopt, spec, "agents", std::nullopt, env);
  CHECK(backend.shell_filesystem_limits().write_chunk_chars ==
        exedev::exedev_shell_filesystem_limits(env, spec.working_dir()).write_chunk_chars);
  CHECK_FALSE(backend.ref());

  exedev::SandboxBackend attached(exedev::workspace::WorkspaceRef{"exedev", "build-42"}, spec, "agents");
  CHECK(attached.ref() == exedev::workspace::WorkspaceRef{"exedev", "build-42"});

  CHECK_THROWS_AS(exedev::SandboxBackend(exedev::workspace::WorkspaceRef{"local", "/tmp"}, spec, "agents"),
                  std::invalid_argument);
  CHECK_THROWS_AS(exedev::SandboxBackend(exedev::workspace::WorkspaceRef{"exedev", "Bad Name"}, spec, "agents"),
                  std::invalid_argument);
  CHECK_THROWS_AS(exedev::SandboxBackend(std::nullopt, spec, "Bad Tag"), std::invalid_argument);
  const exedev::VMSpec copy_without_tags({.base = "golden", .copy_base_tags = false});
  CHECK_THROWS_WITH(exedev::SandboxBackend(std::nullopt, copy_without_tags, "agents"),
                    Catch::Contains("copy_base_tags=false can't be used with scope_tag"));
  CHECK_NOTHROW(exedev::SandboxBackend(std::nullopt, copy_without_tags, std::nullopt));
}
