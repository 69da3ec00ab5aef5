#pragma once
// What the benchmarks share: their payloads, clocks and resource figures, the emulator as a
// process of its own (so a process's figures are the client's alone), an SSH key the emulator
// accepts, and the scripted agent session of issue 25 (B8) measured in /exec requests.

#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/tools/file_system.hpp>
#include <exedev/tools/shell.hpp>
#include <exedev/workspace/workspace.hpp>

#include "common/subprocess.hpp"

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace bench {

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using Clock = std::chrono::steady_clock;

inline constexpr std::size_t kMiB = 1024 * 1024;

inline ws::Bytes random_bytes(std::size_t size) {
  std::mt19937_64 engine{7};
  ws::Bytes data(size, '\0');
  for (auto& c : data) c = static_cast<char>(engine() & 0xFF);
  return data;
}

// C++-like lines with varying identifiers and numbers: compresses about as well as real code.
inline ws::Bytes source_text(std::size_t size, std::uint64_t seed = 11) {
  std::mt19937_64 engine{seed};
  const char* words[] = {"const", "auto", "return", "std::string", "value", "co_await", "if", "for", "options",
                         "result", "static_cast<int>", "namespace", "client", "request", "// why:"};
  ws::Bytes text;
  while (text.size() < size) {
    text += std::string(2 * (engine() % 4), ' ');
    for (int i = 0, n = 3 + static_cast<int>(engine() % 6); i < n; ++i) {
      text += words[engine() % std::size(words)];
      text += (engine() % 3 == 0) ? "_" + std::to_string(engine() % 1000) + " " : " ";
    }
    text += ";\n";
  }
  text.resize(size);
  return text;
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// User + system CPU seconds of this process so far.
inline double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/// This process's peak resident set so far.
inline double peak_rss_mib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

/// Starts this process's peak RSS again from its current RSS (Linux: /proc/self/clear_refs),
/// so that peak_rss_since_reset_mib() tells the peak of what follows. False where the kernel
/// does not allow it.
inline bool reset_peak_rss() {
  std::FILE* refs = std::fopen("/proc/self/clear_refs", "w");
  if (refs == nullptr) return false;
  const bool written = std::fputs("5", refs) >= 0;
  return std::fclose(refs) == 0 && written;
}

/// The peak RSS since the last reset_peak_rss() (VmHWM), in MiB; 0 when unknown.
inline double peak_rss_since_reset_mib() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  unsigned long kib = 0;
  while (std::fgets(line, sizeof line, status) != nullptr && std::sscanf(line, "VmHWM: %lu kB", &kib) != 1) {
  }
  std::fclose(status);
  return static_cast<double>(kib) / 1024.0;
}

/// /exec requests among the emulator's records from `from` on that were answered `status`.
inline std::size_t count_status(const exedev::emulator::Emulator& emulator, std::size_t from, unsigned status) {
  const auto records = emulator.commands();
  std::size_t n = 0;
  for (std::size_t i = from; i < records.size(); ++i) n += records[i].http_status == status;
  return n;
}

/// A token of its own for one run under the limiter (its bucket starts full), allowed what a
/// SandboxBackend sends.
inline std::string fresh_token(exedev::emulator::Emulator& emulator) {
  exedev::emulator::TokenSpec spec;
  spec.cmds = std::vector<std::string>{"new", "ls", "ssh", "rm", "tag", "comment", "whoami"};
  return emulator.issue_token(spec);
}

/// The emulator binary as a child process; its `key=value` lines on stdout say where it is.
class EmulatorProcess {
 public:
  /// Starts `program` with `arguments` and reads its lines until every key of `wanted` is there.
  EmulatorProcess(const std::string& program, const std::vector<std::string>& arguments,
                  const std::vector<std::string>& wanted) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> words{program};
    words.insert(words.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (auto& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    const int error = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (error != 0) throw std::runtime_error("could not start the emulator");
    FILE* out = ::fdopen(fds[0], "r");
    const auto complete = [&] {
      for (const auto& key : wanted) {
        if (!settings_.count(key)) return false;
      }
      return true;
    };
    char line[4096];
    while (!complete() && std::fgets(line, sizeof line, out)) {
      std::string text(line);
      if (!text.empty() && text.back() == '\n') text.pop_back();
      const auto equals = text.find('=');
      if (equals != std::string::npos) settings_[text.substr(0, equals)] = text.substr(equals + 1);
    }
    std::fclose(out);
    if (!complete()) throw std::runtime_error("the emulator did not start");
  }
  ~EmulatorProcess() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  EmulatorProcess(const EmulatorProcess&) = delete;
  EmulatorProcess& operator=(const EmulatorProcess&) = delete;

  [[nodiscard]] const std::string& setting(const std::string& key) const { return settings_.at(key); }

  [[nodiscard]] exedev::ClientOptions client_options() const {
    exedev::ClientOptions options;
    options.endpoint = settings_.at("url");
    options.ca_file = settings_.at("ca_file");
    options.token = settings_.at("token");
    return options;
  }

 private:
  pid_t pid_ = -1;
  std::map<std::string, std::string> settings_;
};

/// An ed25519 key pair made by ssh-keygen in a temporary directory of its own (removed with it):
/// `private_key` and `public_key` (its .pub).
class SshKey {
 public:
  SshKey() {
    std::string pattern = (std::filesystem::temp_directory_path() / "exedev-bench-key-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("no temporary directory for a key");
    directory_ = pattern;
    private_key_ = directory_ / "id_ed25519";
    exedev::detail::SpawnRequest request;
    request.program = "/usr/bin/ssh-keygen";
    request.argv = {request.program, "-q", "-t", "ed25519", "-N", "", "-C", "exedev-bench", "-f", private_key_.string()};
    request.directory = directory_.string();
    const auto started = exedev::detail::spawn_process(request);
    int status = 0;
    if (started.error != 0 || ::waitpid(started.pid, &status, 0) != started.pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      throw std::runtime_error("ssh-keygen could not make a key");
    }
  }
  ~SshKey() {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  SshKey(const SshKey&) = delete;
  SshKey& operator=(const SshKey&) = delete;

  [[nodiscard]] const std::filesystem::path& private_key() const { return private_key_; }
  [[nodiscard]] std::filesystem::path public_key() const { return private_key_.string() + ".pub"; }
  /// The .pub file's line, as `ssh-key add` takes it.
  [[nodiscard]] std::string public_line() const {
    std::FILE* file = std::fopen(public_key().c_str(), "r");
    if (file == nullptr) throw std::runtime_error("the public key is unreadable");
    char line[1024] = {};
    const bool read = std::fgets(line, sizeof line, file) != nullptr;
    std::fclose(file);
    if (!read) throw std::runtime_error("the public key is empty");
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

 private:
  std::filesystem::path directory_;
  std::filesystem::path private_key_;
};

// ---- B8: a scripted agent session ---------------------------------------------------------------

struct Subject {
  std::string name;
  std::shared_ptr<exedev::SandboxBackend> backend;
  std::shared_ptr<ws::Workspace> workspace;
};

struct ToolCall {
  std::string toolset;  // "fs" or "shell"
  std::string name;
  std::string arguments;  // JSON; "{id}" is replaced by the last started job's ID
};

inline std::string json_text(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The session of issue 25: list, find, 9 reads, grep, file_info, 5 edits, mkdir, 3 writes, 4
// commands, a background job started, checked twice and stopped.
inline std::vector<ToolCall> agent_session() {
  std::vector<ToolCall> calls;
  calls.push_back({"fs", "list_directory", R"({"path": "."})"});
  calls.push_back({"fs", "find_files", R"({"pattern": "**/*.cpp"})"});
  for (int i = 0; i < 9; ++i) calls.push_back({"fs", "read_file", "{\"path\": \"src/mod" + std::to_string(i) + ".cpp\"}"});
  calls.push_back({"fs", "search_files", R"({"pattern": "TODO", "path": "src"})"});
  calls.push_back({"fs", "file_info", R"({"path": "src/mod0.cpp"})"});
  for (int i = 0; i < 5; ++i) {
    calls.push_back({"fs", "edit_file",
                     "{\"path\": \"src/mod" + std::to_string(i) + ".cpp\", \"old_text\": \"return " + std::to_string(i) +
                         ";\", \"new_text\": \"return " + std::to_string(i + 100) + ";\"}"});
  }
  calls.push_back({"fs", "create_directory", R"({"path": "tests/unit"})"});
  for (int i = 0; i < 3; ++i) {
    calls.push_back({"fs", "write_file",
                     "{\"path\": \"tests/unit/t" + std::to_string(i) + ".cpp\", \"content\": " +
                         json_text("#include \"mod" + std::to_string(i) + ".hpp\"\nint test() { return 0; }\n") + "}"});
  }
  calls.push_back({"shell", "run_command", R"({"command": "ls src"})"});
  calls.push_back({"shell", "run_command", R"({"command": "grep -c return src/mod1.cpp"})"});
  calls.push_back({"shell", "run_command", R"({"command": "cat tests/unit/t0.cpp"})"});
  calls.push_back({"shell", "run_command", R"({"command": "wc -l src/mod2.cpp"})"});
  calls.push_back({"shell", "start_command", R"({"command": "for i in 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 1; done"})"});
  calls.push_back({"shell", "check_command", R"({"command_id": "{id}"})"});
  calls.push_back({"shell", "check_command", R"({"command_id": "{id}"})"});
  calls.push_back({"shell", "stop_command", R"({"command_id": "{id}"})"});
  return calls;
}

/// Requests of one tool's calls in a session.
struct ToolTally {
  std::size_t requests = 0;
  std::size_t calls = 0;
  std::size_t most = 0;  // the most requests one call made
};

struct SessionResult {
  std::map<std::string, ToolTally> per_tool;
  std::size_t requests = 0;
  std::size_t refused = 0;  // 429s
  std::size_t failed = 0;   // calls that did not succeed
  double seconds = 0;
  std::string first_failure;
};

// Source text as a project holds it: functions of C++ (or Python) with comments, names and
// numbers drawn from a seeded generator, whole functions until `size` bytes are reached, so that
// a file compresses about as real code does. No `return N;` with N below 1000 and no `TODO`
// appear: the session's edits and search find only what seed_project puts there.
inline std::string project_source(std::size_t size, std::uint64_t seed, bool python) {
  std::mt19937_64 engine{seed};
  const char* verbs[] = {"parse", "load", "store", "render", "update", "check", "merge", "split",
                         "encode", "decode", "fetch", "send", "build", "scan", "apply", "resolve"};
  const char* nouns[] = {"request", "buffer", "token", "record", "header", "client", "session", "page", "chunk",
                         "entry", "value", "option", "result", "path", "frame", "socket", "table", "index"};
  const auto pick = [&](const auto& words) { return std::string(words[engine() % std::size(words)]); };
  const auto number = [&](std::uint64_t below) { return std::to_string(engine() % below); };
  std::string text;
  while (text.size() < size) {
    const std::string verb = pick(verbs), noun = pick(nouns), other = pick(nouns);
    const std::string name = verb + "_" + noun + "_" + number(1000);
    const int statements = 2 + static_cast<int>(engine() % 6);
    if (python) {
      text += "\n\ndef " + name + "(" + noun + ", " + other + "=None, count=" + number(64) + "):\n";
      text += "    \"\"\"" + verb + " the " + noun + " of each " + other + ", at most count times.\"\"\"\n";
      text += "    total = count * " + number(100) + "\n";
      for (int i = 0; i < statements; ++i) {
        switch (engine() % 4) {
          case 0: text += "    for item in " + noun + ":\n        if len(item) > " + number(500) + ":\n            total += len(item)\n"; break;
          case 1: text += "    # " + pick(verbs) + " the " + pick(nouns) + " before the " + pick(nouns) + "\n"; break;
          case 2: text += "    " + other + " = " + pick(verbs) + "_" + pick(nouns) + "(" + noun + ", " + number(4096) + ")\n"; break;
          default: text += "    if " + other + " is None:\n        raise ValueError(\"no " + other + " for " + name + "\")\n"; break;
        }
      }
      text += "    return total + " + std::to_string(1000 + engine() % 9000) + "\n";
    } else {
      text += "\n// " + verb + "s the " + noun + " of each " + other + " (at most `count`).\n";
      text += "static int " + name + "(const std::string& " + noun + ", int count) {\n";
      text += "  auto total = count * " + number(100) + ";\n";
      for (int i = 0; i < statements; ++i) {
        switch (engine() % 4) {
          case 0: text += "  for (int i = 0; i < count; ++i) {\n    if (" + noun + ".size() > " + number(500) + ") total += " + noun + "[i % " + noun + ".size()];\n  }\n"; break;
          case 1: text += "  // " + pick(verbs) + " the " + pick(nouns) + " before the " + pick(nouns) + "\n"; break;
          case 2: text += "  const auto " + other + "_" + number(100) + " = " + pick(verbs) + "_" + pick(nouns) + "(" + noun + ", " + number(4096) + ");\n"; break;
          default: text += "  if (" + noun + ".empty()) throw std::invalid_argument(\"no " + noun + " for " + name + "\");\n"; break;
        }
      }
      text += "  return total + " + std::to_string(1000 + engine() % 9000) + ";\n}\n";
    }
  }
  return text;
}

/// The files a session works on.
enum class SessionShape {
  small_files,   ///< issue 25's project: 9 modules of about 1.5 KiB
  source_files,  ///< issue 41's: 9 modules of 2 KiB to 1 MiB (one of 400 KiB) and 2 Python scripts
};

inline const char* shape_name(SessionShape shape) {
  return shape == SessionShape::small_files ? "small files" : "source files";
}

// The project the agent works on (written before the measurement). Module i holds exactly one
// `return i;` (the session's edit) and one TODO (its search).
inline asio::awaitable<void> seed_project(Subject& subject, SessionShape shape = SessionShape::small_files) {
  co_await subject.workspace->working_dir();  // provisioned outside the measurement
  const std::size_t kib = 1024;
  const std::size_t module_bytes[] = {2 * kib, 62 * kib, 102 * kib, 80 * kib, 400 * kib, 1024 * kib, 8 * kib, 24 * kib, 40 * kib};
  for (int i = 0; i < 9; ++i) {
    std::string text = "// module " + std::to_string(i) + "\n#include \"mod" + std::to_string(i) + ".hpp\"\n";
    const std::string marked = "int value() { return " + std::to_string(i) + "; }  // TODO: cache\n";
    if (shape == SessionShape::small_files) {
      for (int line = 0; line < 40; ++line) text += "int f" + std::to_string(line) + "() { return " + std::to_string(line + 1000) + "; }\n";
      text += marked;
    } else {
      const auto half = module_bytes[i] / 2;
      text += project_source(half, 100 + i, false) + "\n" + marked;
      text += project_source(module_bytes[i] - std::min(module_bytes[i], text.size()), 200 + i, false);
    }
    co_await subject.workspace->write_bytes("src/mod" + std::to_string(i) + ".cpp", text);
  }
  if (shape == SessionShape::source_files) {
    co_await subject.workspace->write_bytes("src/scripts/build.py", project_source(16 * kib, 300, true));
    co_await subject.workspace->write_bytes("src/scripts/report.py", project_source(120 * kib, 301, true));
  }
}

/// The session's tool calls on `subject`, with the /exec requests each made (the emulator's
/// records).
inline asio::awaitable<SessionResult> run_session(exedev::emulator::Emulator& emulator, Subject& subject) {
  exedev::tools::FileSystem fs(subject.workspace);
  exedev::tools::Shell shell(subject.workspace);
  SessionResult result;
  std::string job_id;
  const auto start = Clock::now();
  const auto first = emulator.commands().size();
  for (auto call : agent_session()) {
    if (const auto at = call.arguments.find("{id}"); at != std::string::npos) call.arguments.replace(at, 4, job_id);
    exedev::tools::Toolset& toolset = call.toolset == "fs" ? static_cast<exedev::tools::Toolset&>(fs) : shell;
    const auto before = emulator.commands().size();
    exedev::tools::ToolCallContext context;
    context.run_id = "bench-run";
    context.tool_call_id = "call-" + std::to_string(before);
    auto calling = toolset.call(call.name, call.arguments, std::move(context));
    exedev::tools::ToolResult outcome;
    try {
      outcome = co_await std::move(calling);
    } catch (const std::exception& error) {  // what escapes a tool call fails it too
      outcome.outcome = exedev::tools::ToolOutcome::end_run;
      outcome.text = error.what();
    }
    const auto requests = emulator.commands().size() - before;
    auto& tally = result.per_tool[call.name];
    tally.requests += requests;
    tally.calls += 1;
    tally.most = std::max(tally.most, requests);
    if (outcome.outcome != exedev::tools::ToolOutcome::success) {
      ++result.failed;
      if (result.first_failure.empty()) result.first_failure = call.name + ": " + outcome.text.substr(0, 100);
    }
    if (call.name == "start_command") {
      if (const auto id = outcome.text.rfind("ID: "); id != std::string::npos) job_id = outcome.text.substr(id + 4);
    }
  }
  result.seconds = seconds_since(start);
  result.requests = emulator.commands().size() - first;
  result.refused = count_status(emulator, first, 429);
  co_return result;
}

/// The error and the ones nested in it (what a failed benchmark step was caused by).
inline void print_error_chain(const char* program, const std::exception& error) {
  std::fprintf(stderr, "%s: %s\n", program, error.what());
  try {
    std::rethrow_if_nested(error);
  } catch (const std::exception& cause) {
    print_error_chain(program, cause);
  }
}

}  // namespace bench
