// The types of call arguments: what users write inside `co_await` must compile and run
// correctly with GCC 12 and Clang (or, where GCC 12 would miscompile it, not compile at all;
// tests/headers/coawait_guard checks that refusal).
#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>

#include <exedev/client.hpp>
#include <exedev/coawait_guard.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vms.hpp>
#include <exedev/ssh/options.hpp>
#include <exedev/string_list.hpp>
#include <exedev/testing/conformance.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/tools/file_system.hpp>
#include <exedev/tools/shell.hpp>
#include <exedev/tools/toolset.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace ws = exedev::workspace;

namespace {

// An options struct that owns strings, lists or callbacks is an aggregate (designated
// initializers work) whose last member is the guard.
template <typename Options>
constexpr bool guarded_aggregate =
    std::is_aggregate_v<Options> && std::is_same_v<decltype(Options::coawait_guard), exedev::CoAwaitGuard> &&
    !std::is_trivially_destructible_v<Options>;

static_assert(guarded_aggregate<exedev::ClientOptions>);
static_assert(guarded_aggregate<exedev::NewVMOptions>);
static_assert(guarded_aggregate<exedev::CopyVMOptions>);
static_assert(guarded_aggregate<exedev::ResizeVMOptions>);
static_assert(guarded_aggregate<exedev::ClientRunOptions>);
static_assert(guarded_aggregate<exedev::ScriptOptions>);
static_assert(guarded_aggregate<exedev::VMSpecFields>);
static_assert(guarded_aggregate<exedev::VMsOptions>);
static_assert(guarded_aggregate<exedev::SandboxOptions>);
static_assert(guarded_aggregate<exedev::SandboxBackendOptions>);
static_assert(guarded_aggregate<exedev::SshOptions>);
static_assert(guarded_aggregate<ws::WorkspaceRef>);
static_assert(guarded_aggregate<ws::RunOptions>);
static_assert(guarded_aggregate<exedev::tools::FileSystemOptions>);
static_assert(guarded_aggregate<exedev::tools::ToolCallContext>);
static_assert(guarded_aggregate<exedev::tools::ShellOptions>);
static_assert(guarded_aggregate<exedev::testing::BackendSuite>);
static_assert(guarded_aggregate<exedev::emulator::TokenSpec>);
static_assert(guarded_aggregate<exedev::emulator::Fault>);
static_assert(guarded_aggregate<exedev::emulator::Options>);

// Every member of an options struct has a default initializer, so a designated initializer
// may leave any of them out without -Wmissing-field-initializers (this file builds with
// -Wextra -Werror). Each line names only the struct's first member.
[[maybe_unused]] const exedev::ClientOptions client_options{.token = {}};
[[maybe_unused]] const exedev::NewVMOptions new_vm_options{.name = {}};
[[maybe_unused]] const exedev::CopyVMOptions copy_vm_options{.source = {}};
[[maybe_unused]] const exedev::ResizeVMOptions resize_vm_options{.memory = {}};
[[maybe_unused]] const exedev::ClientRunOptions client_run_options{.env = {}};
[[maybe_unused]] const exedev::ScriptOptions script_options{.args = {}};
[[maybe_unused]] const exedev::VMSpecFields vm_spec_fields{.name = {}};
[[maybe_unused]] const exedev::VMsOptions vms_options{.scope_tag = {}};
[[maybe_unused]] const exedev::SandboxOptions sandbox_options{.spec = exedev::VMSpec()};
[[maybe_unused]] const exedev::SandboxBackendOptions sandbox_backend_options{.ref = {}};
[[maybe_unused]] const ws::WorkspaceRef workspace_ref{.provider = {}};
[[maybe_unused]] const ws::RunOptions workspace_run_options{.env = {}};
[[maybe_unused]] const exedev::tools::FileSystemOptions file_system_options{.root_dir = {}};
[[maybe_unused]] const exedev::tools::ToolCallContext tool_call_context{.run_id = {}};
[[maybe_unused]] const exedev::tools::ShellOptions shell_options{.allowed_commands = {}};
[[maybe_unused]] const exedev::testing::BackendSuite backend_suite{.name = {}};
[[maybe_unused]] const exedev::emulator::TokenSpec token_spec{.cmds = {}};
[[maybe_unused]] const exedev::emulator::Fault fault{.kind = {}};
[[maybe_unused]] const exedev::emulator::Options emulator_options{.state_dir = {}};

// The guard takes no space and changes nothing a user can observe but GCC 12's refusal.
struct Unguarded {
  std::string name{};
  std::vector<std::string> tags{};
};
struct Guarded {
  std::string name{};
  std::vector<std::string> tags{};
  EXEDEV_COAWAIT_GUARD;
};
static_assert(sizeof(Guarded) == sizeof(Unguarded));
static_assert(std::is_empty_v<exedev::CoAwaitGuard> && std::is_trivially_copyable_v<exedev::CoAwaitGuard>);

// StringList has no initializer-list constructor: a braced list reaches the variadic one, so no
// std::initializer_list (which GCC 12 cannot compile inside co_await) is made. The test cases
// below write braced lists inside co_await; with GCC 12 they would not compile otherwise.
static_assert(std::is_convertible_v<const char (&)[4], exedev::StringList>);
static_assert(std::is_convertible_v<std::vector<std::string>, exedev::StringList>);
static_assert(!std::is_convertible_v<int, exedev::StringList>);

std::vector<std::string> items_of(exedev::StringList list) { return std::move(list).items(); }

}  // namespace

TEST_CASE("StringList: braced lists, a single string and vectors give their strings in order") {
  const std::string name = "agent-vm";
  CHECK(items_of({}).empty());
  CHECK(items_of("one") == std::vector<std::string>{"one"});
  CHECK(items_of({"make", "test"}) == std::vector<std::string>{"make", "test"});
  CHECK(items_of({name, std::string(40, 'x'), "c"}) == std::vector<std::string>{name, std::string(40, 'x'), "c"});
  std::vector<std::string> named{"a", "b"};
  CHECK(items_of(named) == named);
  CHECK(named.size() == 2);  // copied, not taken
  CHECK(items_of(std::move(named)) == std::vector<std::string>{"a", "b"});
  const exedev::StringList list{"x", "y", "z"};
  CHECK(list.size() == 3);
  CHECK(!list.empty());
  CHECK(std::vector<std::string>(list.begin(), list.end()) == list.items());
}

TEST_CASE("A braced argv written inside co_await runs the command with each item intact") {
  // Long items (past the small-string buffer) so that a double destruction would be a double
  // free, which the asan preset reports.
  const auto dir = std::filesystem::temp_directory_path();
  auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.string()));
  const std::string long_item(64, 'y');
  const auto result = exedev::testing::run([&](auto) -> boost::asio::awaitable<ws::CommandResult> {
    co_return co_await workspace->run(ws::Command::argv({"printf", "%s|%s|%s", std::string(48, 'x'), long_item, "end"}));
  });
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == std::string(48, 'x') + "|" + long_item + "|end");
}

TEST_CASE("A command built inside co_await and awaited later still owns its argv") {
  const auto dir = std::filesystem::temp_directory_path();
  auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.string()));
  const auto result = exedev::testing::run([&](auto) -> boost::asio::awaitable<ws::CommandResult> {
    auto pending = workspace->run(ws::Command::argv({"printf", "%s", std::string(80, 'z')}));
    co_return co_await std::move(pending);
  });
  CHECK(result.stdout_text == std::string(80, 'z'));
}
