// The shell filesystem's chunk size on SandboxBackend keeps every lobby line under exe.dev's
// 64 KiB request body: checked here with the real script builders of the workspace layer (the
// commands) and of the client (the run wrapper and the lobby line).
#include <catch2/catch.hpp>

#include <exedev/sandbox/sandbox_backend.hpp>

#include "client/run_protocol.hpp"
#include "workspace/shell_filesystem.hpp"

namespace {

// The lobby line Client::run sends to launch `shell_line` (the largest of its requests), built
// as src/client/client.cpp run_request builds it.
std::size_t line_size(const std::string& shell_line, const exedev::workspace::Env& env,
                      const std::optional<std::string>& working_dir) {
  exedev::detail::ScriptRequest request;
  request.id = exedev::detail::random_hex(16);
  request.boundary = "B" + exedev::detail::random_hex(12);
  for (int i = 0; i < 4; ++i) request.acks.push_back(exedev::detail::random_hex(16));
  request.shell_line = shell_line;
  request.env = std::map<std::string, std::string>(env.begin(), env.end());
  request.working_dir = working_dir;
  const std::string vm(52, 'v');
  return ("ssh " + exedev::lobby_quote(vm) + " " +
          exedev::lobby_quote(exedev::detail::remote_command(exedev::detail::build_script(request))))
      .size();
}

// Every command the shell filesystem sends per chunk, for a file under a path of `path_bytes`.
std::vector<std::string> write_commands(std::size_t chunk_chars, std::size_t path_bytes) {
  using namespace exedev::workspace::detail;
  const std::string parent = "/" + std::string(path_bytes - 80, 'd');
  const std::string destination = parent + "/weird name.bin";
  const std::string temp = parent + "/.pydantic-ai-0123456789abcdef0123456789abcdef.tmp";
  const std::string chunk(chunk_chars, 'Q');
  return {write_first_chunk_script(parent, temp, chunk), write_append_script(temp, chunk),
          commit_script(destination, temp, temp + ".decoded")};
}

}  // namespace

TEST_CASE("the write chunk fits exe.dev's request body with room to spare") {
  const auto limits = exedev::exedev_shell_filesystem_limits({}, std::nullopt);
  CHECK(limits.write_chunk_chars % 4 == 0);
  CHECK(limits.write_chunk_chars >= 32 * 1024);
  CHECK(limits.read_page_bytes == 64 * 1024);
  for (const auto& command : write_commands(limits.write_chunk_chars, 1024)) {
    CHECK(line_size(command, {}, std::nullopt) < exedev::max_request_body_bytes);
  }
  // The budget is used, not guessed far below it: a chunk 1 KiB larger no longer fits.
  CHECK(line_size(write_commands(limits.write_chunk_chars + 1024, 1024)[0], {}, std::nullopt) >=
        exedev::max_request_body_bytes);
}

TEST_CASE("the backend's env and working_dir shrink the chunk, which still fits") {
  exedev::workspace::Env env{{"API_URL", std::string(6000, 'u')}, {"QUOTED", std::string(500, '\'')}};
  const std::optional<std::string> working_dir = "projects/it's here";
  const auto plain = exedev::exedev_shell_filesystem_limits({}, std::nullopt);
  const auto limits = exedev::exedev_shell_filesystem_limits(env, working_dir);
  CHECK(limits.write_chunk_chars < plain.write_chunk_chars);
  for (const auto& command : write_commands(limits.write_chunk_chars, 1024)) {
    CHECK(line_size(command, env, working_dir) < exedev::max_request_body_bytes);
  }
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
