#include <exedev/tools/shell.hpp>

#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/inert_text.hpp"
#include "common/random_ids.hpp"
#include "tools/arguments.hpp"
#include "tools/content_hash.hpp"
#include "tools/outcome.hpp"
#include "tools/redaction.hpp"
#include "tools/output.hpp"
#include "tools/schema.hpp"
#include "tools/shell_jobs.hpp"
#include "tools/shell_persistent.hpp"
#include "tools/shell_policy.hpp"
#include "tools/shell_scripts.hpp"
#include "tools/shell_sessions.hpp"
#include "tools/shell_specs.hpp"
#include "tools/text.hpp"
#include "tools/utf8_stream.hpp"
#include "tools/workspace_access.hpp"
#include "workspace/shell_filesystem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

namespace exedev::tools {

namespace ws = exedev::workspace;
using detail::has_errc;
using detail::Job;
using detail::ModelRetry;
using detail::python_float;
using detail::python_repr;
using ws::detail::posix_join;

namespace {

const std::vector<std::string>& all_tool_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all{"run_command", "start_command", "check_command", "stop_command", persistent_tool_name};
    all.insert(all.end(), session_tool_names().begin(), session_tool_names().end());
    return all;
  }();
  return names;
}

const std::vector<std::string>& default_denied_commands() {
  static const std::vector<std::string> names{"rm",       "rmdir",  "mkfs", "dd",       "format",
                                              "shutdown", "reboot", "halt", "poweroff", "init"};
  return names;
}

/// UTF-8 bytes per character at most: 4 * max_output_chars bytes of a log keep every character
/// the cap keeps.
constexpr std::uint64_t kOutputBytesPerChar = 4;

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool offers_sessions(const ShellOptions& o) {
  return std::any_of(session_tool_names().begin(), session_tool_names().end(),
                     [&](const std::string& name) { return contains(o.tools, name); });
}

void validate(const ShellOptions& o) {
  const bool persistent = contains(o.tools, persistent_tool_name);
  if (offers_sessions(o) && !o.allow_interactive) {
    throw std::invalid_argument("The session tools drive interactive programs: they need allow_interactive=True.");
  }
  if (o.max_file_bytes) {
    if (*o.max_file_bytes == 0) throw std::invalid_argument("max_file_bytes must be a positive integer.");
    if (persistent) throw std::invalid_argument("max_file_bytes is not supported with the persistent shell tool.");
    // A session's program runs under its holder, outside the shell that would set the limit.
    if (offers_sessions(o)) throw std::invalid_argument("max_file_bytes is not supported with the session tools.");
    if (*o.max_file_bytes > static_cast<std::uint64_t>(INT64_MAX)) {
      throw std::invalid_argument("max_file_bytes must not exceed sys.maxsize.");
    }
    if (o.persist_cwd) {
      throw std::invalid_argument(
          "max_file_bytes is not supported with persist_cwd; cwd capture writes a file in the child.");
    }
  }
  if (!o.allowed_commands.empty() && o.denied_commands && !o.denied_commands->empty()) {
    throw std::invalid_argument("Specify allowed_commands or denied_commands, not both.");
  }
  if (o.max_output_chars == 0) throw std::invalid_argument("max_output_chars must be a positive integer.");
  std::vector<std::string> unknown;
  for (const auto& name : o.tools) {
    if (!contains(all_tool_names(), name) && !contains(unknown, name)) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    std::string message = "Unknown shell tools: ";
    for (std::size_t i = 0; i < unknown.size(); ++i) message += (i ? ", " : "") + unknown[i];
    message += ". Available: ";
    for (std::size_t i = 0; i < all_tool_names().size(); ++i) message += (i ? ", " : "") + all_tool_names()[i];
    throw std::invalid_argument(message + ".");
  }
  const double timeout = o.default_timeout.count();
  // The reference checks only the shell tool's bound; a non-positive or infinite timeout would
  // fail every run_command at the workspace, so it is refused here, where it is written.
  if (!std::isfinite(timeout) || timeout <= 0) {
    throw std::invalid_argument("default_timeout must be a positive finite number of seconds.");
  }
  if (persistent && timeout > detail::kMaxForegroundWait.count()) {
    throw std::invalid_argument("default_timeout must be greater than zero and at most " +
                                detail::python_g(detail::kMaxForegroundWait.count()) + " seconds for the shell tool.");
  }
}

/// The reference's `recoverable`: what the model can act on becomes a retry. A refused
/// permission (a read-only refusal included) says so; a vanished working directory is named.
Task<std::string> recoverable(Task<std::string> tool) {
  std::exception_ptr error;
  try {
    co_return co_await std::move(tool);
  } catch (const ws::WorkspaceReadOnlyError& e) {
    throw ModelRetry(e.what());
  } catch (const std::filesystem::filesystem_error&) {
    error = std::current_exception();
  }
  if (has_errc(error, std::errc::permission_denied)) {
    throw ModelRetry(exedev::detail::exception_as<std::filesystem::filesystem_error>(error)->what());
  }
  if (has_errc(error, std::errc::no_such_file_or_directory)) throw ModelRetry("The working directory no longer exists.");
  if (has_errc(error, std::errc::not_a_directory)) throw ModelRetry("The working directory is no longer a directory.");
  std::rethrow_exception(error);
}

}  // namespace

struct Shell::State {
  std::shared_ptr<ws::Workspace> workspace;
  ShellOptions options;
  detail::CommandPolicy policy;
  std::optional<std::string> jobs_base;
  /// ShellOptions' redacted_values and redact, for every text the tools return.
  std::shared_ptr<const detail::Redaction> redaction;
  /// The session tools, when offered.
  std::optional<detail::SessionTools> sessions;
  /// persist_cwd: the directory recorded for calls without a run id (or seen for cwd_run_id).
  std::optional<std::string> cwd;
  std::string cwd_run_id;

  std::optional<ws::Env> command_env() const {
    if (!options.env) return std::nullopt;
    return detail::filter_env(*options.env, options.denied_env_patterns);
  }

  void check(const std::string& command) const {
    if (auto refusal = detail::command_refusal(policy, command)) throw ModelRetry(*refusal);
  }

  Task<std::string> base() {
    if (!jobs_base) jobs_base = co_await detail::metadata_dir(workspace, detail::kJobsDirName);
    co_return *jobs_base;
  }

  Task<std::string> cwd_state_path(std::string run_id) {
    // A run id may hold path separators: its hash names the file.
    const auto directory = co_await base();
    co_return posix_join(posix_join(directory, "run-state"), detail::sha256_hex(run_id));
  }

  Task<std::string> cwd_for(std::string run_id);
  Task<void> apply_captured_cwd(std::string run_id, std::string capture);
  Task<void> remove_capture(std::string capture);
  Task<std::string> run_command(std::string command, std::optional<double> timeout_seconds, std::string run_id,
                                std::function<void(std::string_view)> on_output);
  Task<std::string> start_command(std::string command, std::string run_id, std::string tool_call_id);
  /// The job `command_id` as job_report_script reports it (stopped and removed first when
  /// `stop`); nullopt for an unknown ID.
  Task<std::optional<detail::JobReport>> job_report(std::string command_id, bool stop);
  Task<std::string> check_command(std::string command_id);
  Task<std::string> stop_command(std::string command_id);
  Task<std::string> dispatch(std::string name, std::string arguments, ToolCallContext context);
};

Shell::Shell(std::shared_ptr<ws::Workspace> workspace) : Shell(std::move(workspace), ShellOptions{}) {}

Shell::Shell(std::shared_ptr<ws::Workspace> workspace, ShellOptions options) : state_(std::make_shared<State>()) {
  if (!workspace) throw std::invalid_argument("Shell needs a workspace");
  validate(options);
  state_->workspace = std::move(workspace);
  state_->policy.allowed_commands = options.allowed_commands;
  state_->policy.denied_commands = options.denied_commands.value_or(
      options.allowed_commands.empty() ? default_denied_commands() : std::vector<std::string>{});
  state_->policy.denied_operators = options.denied_operators;
  state_->policy.allow_interactive = options.allow_interactive;
  state_->redaction = std::make_shared<const detail::Redaction>(options.redacted_values, options.redact);
  state_->options = std::move(options);
  if (offers_sessions(state_->options)) {
    detail::SessionToolOptions session_options;
    session_options.policy = state_->policy;
    session_options.env = state_->command_env().value_or(ws::Env{});
    session_options.max_output_chars = state_->options.max_output_chars;
    session_options.redaction = state_->redaction;
    state_->sessions.emplace(state_->workspace, std::move(session_options));
  }
}

Shell::~Shell() = default;

std::string Shell::id() const { return state_->options.id; }

Task<std::vector<ToolDefinition>> Shell::tools() {
  auto state = state_;
  detail::require_workspace(*state->workspace, "ShellToolset");
  std::vector<ToolDefinition> definitions;
  if (!detail::supports_commands(*state->workspace)) co_return definitions;
  const bool sessions = detail::supports_process_sessions(*state->workspace);
  for (const auto& name : all_tool_names()) {
    if (!contains(state->options.tools, name)) continue;
    if (contains(session_tool_names(), name) && !sessions) continue;
    definitions.push_back(detail::definition_of(detail::shell_tool_spec(name)));
  }
  co_return definitions;
}

Task<ToolResult> Shell::call(std::string name, std::string arguments, ToolCallContext context) {
  detail::require_workspace(*state_->workspace, "ShellToolset");
  // Keeps the state alive across the awaits even if the tool set is destroyed meanwhile.
  auto state = state_;
  const auto executor = co_await boost::asio::this_coro::executor;
  detail::RedactedOutput streamed(state->redaction, std::move(context.on_output));
  context.on_output = streamed.callback();
  const auto relay = detail::relay_wait_notices(executor, context.on_output);  // waits for exe.dev's rate limit
  // The session tools redact their answers themselves (a session's output as a stream).
  const bool answer_redacted = contains(session_tool_names(), name);
  auto result = co_await detail::to_tool_result(state->dispatch(std::move(name), std::move(arguments), std::move(context)));
  streamed.finish();
  if (!answer_redacted || result.outcome != ToolOutcome::success) result.text = state->redaction->apply(std::move(result.text));
  // Every result keeps its tail: each tool puts its status, ID and exit lines last.
  if (result.outcome == ToolOutcome::success) result.text = detail::truncate_tail(result.text, state->options.max_output_chars);
  co_return result;
}

Task<std::string> Shell::State::dispatch(std::string name, std::string arguments, ToolCallContext context) {
  std::vector<std::string> offered;
  for (const auto& tool : all_tool_names()) {
    if (contains(options.tools, tool)) offered.push_back(tool);
  }
  if (!contains(offered, name)) throw ModelRetry(detail::unknown_tool_message(name, offered));
  const detail::Arguments args(detail::shell_tool_spec(name), arguments);
  if (name == "run_command") {
    co_return co_await recoverable(
        run_command(args.text("command"), args.optional_number("timeout_seconds"), context.run_id, context.on_output));
  }
  if (name == "start_command") {
    co_return co_await recoverable(start_command(args.text("command"), context.run_id, context.tool_call_id));
  }
  if (name == "check_command") co_return co_await recoverable(check_command(args.text("command_id")));
  if (name == "stop_command") co_return co_await recoverable(stop_command(args.text("command_id")));
  if (contains(session_tool_names(), name)) {
    std::optional<std::string> start_directory;
    if (name == "start_session" && options.persist_cwd) start_directory = co_await cwd_for(context.run_id);
    co_return co_await recoverable(sessions->call(name, args, context.run_id, std::move(start_directory)));
  }
  auto command = args.text("command");
  check(command);
  detail::PersistentRequest request;
  request.command = std::move(command);
  request.base = co_await base();
  request.cwd = co_await workspace->working_dir();
  request.env = command_env().value_or(ws::Env{});
  request.foreground = args.text("mode") == "foreground";
  request.timeout = args.optional_number("timeout").value_or(options.default_timeout.count());
  co_return co_await recoverable(detail::run_persistent(workspace, std::move(request), context.on_output));
}

Task<void> Shell::clear_run_cwd(std::string run_id) {
  auto state = state_;
  if (run_id.empty()) co_return;
  const auto path = co_await state->cwd_state_path(run_id);
  try {
    co_await state->workspace->remove(path);
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.code() != std::errc::no_such_file_or_directory) throw;
  }
}

// ---- run_command ----

Task<std::string> Shell::State::cwd_for(std::string run_id) {
  std::optional<std::string> state_path;
  std::optional<std::string> recorded;
  if (options.persist_cwd && !run_id.empty()) {
    state_path = co_await cwd_state_path(run_id);
    std::exception_ptr error;
    std::string bytes;
    try {
      bytes = co_await workspace->read_bytes(*state_path);
    } catch (...) {
      error = std::current_exception();
    }
    if (error) {
      if (!has_errc(error, std::errc::no_such_file_or_directory)) std::rethrow_exception(error);
      if (cwd && cwd_run_id == run_id) {
        // This Shell saw a saved directory for this run: a missing record now is lost state.
        cwd.reset();
        throw ModelRetry("The saved working directory was lost; now in the workspace working directory.");
      }
    } else if (ws::is_valid_utf8(bytes)) {
      recorded = std::move(bytes);
    }
  } else {
    recorded = cwd;
  }
  if (!recorded) co_return co_await workspace->working_dir();
  bool is_dir = false;
  if (!recorded->empty() && recorded->front() == '/') {
    std::exception_ptr error;
    try {
      is_dir = (co_await workspace->stat(*recorded)).is_dir;
    } catch (...) {
      error = std::current_exception();
    }
    if (error && !has_errc(error, std::errc::no_such_file_or_directory) &&
        !has_errc(error, std::errc::not_a_directory)) {
      std::rethrow_exception(error);
    }
  }
  if (!is_dir) {
    // A remote shell may report a missing directory only as an exit code: say it here.
    if (state_path) co_await workspace->remove(*state_path);
    cwd.reset();
    const auto working_dir = co_await workspace->working_dir();
    throw ModelRetry("The previous directory was removed; now in " + working_dir + ".");
  }
  co_return *recorded;
}

Task<void> Shell::State::apply_captured_cwd(std::string run_id, std::string capture) {
  // The command already succeeded: a capture that is not text, not absolute or not a
  // directory is bookkeeping to drop, not a failure to report.
  try {
    auto recorded = co_await workspace->read_bytes(capture);
    if (!ws::is_valid_utf8(recorded)) co_return;
    if (!recorded.empty() && recorded.back() == '\n') recorded.pop_back();
    if (recorded.empty() || recorded.front() != '/') co_return;
    const auto recorded_stat = co_await workspace->stat(recorded);
    if (!recorded_stat.is_dir) co_return;
    auto normalized = ws::normpath(recorded);
    if (!run_id.empty()) {
      const auto state_path = co_await cwd_state_path(run_id);
      co_await workspace->make_dir(ws::detail::posix_dirname(state_path));
      // Parallel calls of one run each start in their own directory; the last to finish wins.
      co_await workspace->write_bytes(state_path, normalized);
      cwd_run_id = run_id;
    }
    cwd = std::move(normalized);
  } catch (const std::filesystem::filesystem_error&) {
  } catch (const std::invalid_argument&) {
  }
}

Task<void> Shell::State::remove_capture(std::string capture) {
  try {
    co_await workspace->remove(capture);
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.code() != std::errc::no_such_file_or_directory) throw;
  }
}

Task<std::string> Shell::State::run_command(std::string command, std::optional<double> timeout_seconds,
                                            std::string run_id, std::function<void(std::string_view)> on_output) {
  check(command);
  const double timeout = timeout_seconds.value_or(options.default_timeout.count());
  if (!std::isfinite(timeout) || timeout <= 0) {
    throw ModelRetry("timeout_seconds must be a positive finite number.");
  }
  std::optional<std::string> capture;
  auto script = command;
  if (options.persist_cwd) {
    // pwd goes to a file, never to stdout, so the command's output cannot spoof it.
    capture = posix_join(co_await base(), "cwd-" + exedev::detail::random_hex(16));
    script = detail::capture_cwd_script(command, *capture);
  }
  std::string output;
  std::exception_ptr error;
  try {
    const auto directory = co_await cwd_for(run_id);
    detail::Utf8Stream out_stream;
    detail::Utf8Stream err_stream;
    ws::RunOptions run_options;
    run_options.env = command_env().value_or(ws::Env{});
    run_options.timeout = ws::Seconds(timeout);
    if (on_output) {
      const auto& emit = on_output;
      run_options.on_stdout = [&emit, &out_stream](std::string_view chunk) {
        if (auto text = out_stream.feed(chunk); !text.empty()) emit(text);
      };
      run_options.on_stderr = [&emit, &err_stream](std::string_view chunk) {
        if (auto text = err_stream.feed(chunk); !text.empty()) emit(text);
      };
    }
    auto to_run = ws::Command::shell(detail::in_directory(directory, detail::limited_script(script, options.max_file_bytes)));
    std::optional<ws::CommandResult> result;
    std::optional<ws::WorkspaceTimeoutError> timed_out;
    try {
      result = co_await workspace->run(std::move(to_run), std::move(run_options));
    } catch (const ws::WorkspaceTimeoutError& e) {
      timed_out = e;
    }
    if (on_output) {
      for (auto* stream : {&out_stream, &err_stream}) {
        if (auto rest = stream->finish(); !rest.empty()) on_output(rest);
      }
    }
    if (timed_out) {
      output = detail::labelled(timed_out->output().stdout_data, timed_out->output().stderr_data, std::nullopt,
                                "[Command timed out after " + python_float(timeout) + "s]");
    } else {
      output = detail::labelled(result->stdout_text, result->stderr_text, "(no output)");
      if (capture && result->exit_code == 0) co_await apply_captured_cwd(run_id, *capture);
      if (result->exit_code != 0) {
        output += "\n[exit code: " + std::to_string(result->exit_code) + "]" +
                  detail::file_limit_status(result->exit_code, options.max_file_bytes);
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (capture) {
    std::exception_ptr cleanup_error;
    try {
      co_await detail::finish_despite_cancellation(
          remove_capture(*capture), std::chrono::duration_cast<std::chrono::steady_clock::duration>(detail::kControlTimeout));
    } catch (...) {
      cleanup_error = std::current_exception();
    }
    if (!error && cleanup_error) error = cleanup_error;
  }
  if (error) std::rethrow_exception(error);
  co_return output;
}

// ---- background jobs ----

Task<std::string> Shell::State::start_command(std::string command, std::string run_id, std::string tool_call_id) {
  check(command);
  // A durable retry of one tool call reuses its job; separate calls get separate jobs.
  std::optional<std::string> job_id;
  if (!run_id.empty() && !tool_call_id.empty()) {
    job_id = detail::sha256_hex(run_id + ":" + tool_call_id).substr(0, 32);
  }
  detail::LaunchRequest request;
  request.cwd = co_await cwd_for(run_id);
  std::string directory;
  if (!jobs_base && detail::supports_commands(*workspace)) {
    // This Shell's first job: the metadata directory's checks travel in the launch's command.
    auto setup = co_await detail::metadata_setup(workspace, detail::kJobsDirName);
    directory = setup.directory;
    request.prelude = std::move(setup.script);
    request.prelude_exit_codes = {detail::kMetadataSymlink, detail::kMetadataFailed};
  } else {
    directory = co_await base();
  }
  const auto job_name = job_id.value_or(exedev::detail::random_hex(16));
  request.directory = posix_join(directory, job_name);
  request.exclusive = job_id.has_value();
  request.combined = false;
  request.command = command;
  request.file_limit = options.max_file_bytes;
  std::optional<Job> job;
  std::optional<detail::PreludeFailed> setup_failed;
  try {
    job = co_await Job::launch(workspace, request, command_env().value_or(ws::Env{}));
  } catch (const detail::PreludeFailed& failed) {
    setup_failed = failed;
  }
  if (setup_failed) {
    // A symlink is refused here; any other failure is left to the separate operations, which
    // report it (or succeed), and the launch then goes alone.
    detail::metadata_setup_done(setup_failed->exit_code, setup_failed->stdout_text);
    request.prelude.clear();
    request.directory = posix_join(co_await base(), job_name);
    job = co_await Job::launch(workspace, request, command_env().value_or(ws::Env{}));
  } else if (!jobs_base && !request.prelude.empty()) {
    jobs_base = directory;
  }
  co_return "Started background command: " + python_repr(command) + "\nID: " +
      ws::detail::posix_basename(job->directory());
}

Task<std::optional<detail::JobReport>> Shell::State::job_report(std::string command_id, bool stop) {
  if (!detail::is_command_id(command_id)) co_return std::nullopt;
  const auto directory = posix_join(co_await base(), command_id);
  // One workspace command reads (and for a stop, ends) the job: one request on a remote backend.
  auto command = ws::Command::shell(detail::job_report_script(directory, options.max_output_chars * kOutputBytesPerChar, stop));
  ws::RunOptions run_options;
  run_options.timeout = detail::kControlTimeout;
  std::optional<ws::CommandResult> result;
  if (stop) {
    // Once begun, the stop finishes even if the call is cancelled.
    auto stopping = [](std::shared_ptr<ws::Workspace> workspace, ws::Command command, ws::RunOptions run_options,
                       std::shared_ptr<std::optional<ws::CommandResult>> out) -> Task<void> {
      *out = co_await workspace->run(std::move(command), std::move(run_options));
    };
    auto out = std::make_shared<std::optional<ws::CommandResult>>();
    auto op = stopping(workspace, std::move(command), std::move(run_options), out);
    co_await detail::finish_despite_cancellation(std::move(op), std::nullopt);
    result = std::move(*out);
  } else {
    result = co_await workspace->run(std::move(command), std::move(run_options));
  }
  if (result->exit_code == detail::kJobUnknown) co_return std::nullopt;
  auto report = result->exit_code == 0 ? detail::parse_job_report(result->stdout_text) : std::nullopt;
  if (!report) {
    const auto message = ws::detail::strip(result->stderr_text);
    throw ws::WorkspaceScriptError(message.empty() ? "Unable to read background command " + python_repr(command_id) + "."
                                                   : exedev::detail::inert_text(message),
                                   PartialOutput{result->stdout_text, result->stderr_text});
  }
  co_return report;
}

namespace {

std::optional<long long> job_exit_code(const detail::JobReport& report) {
  if (!report.status) return std::nullopt;
  return detail::parse_exit_code(ws::utf8_replace_invalid(*report.status));
}

std::string job_text(const detail::JobReport& report, const char* empty, const char* state,
                     std::optional<std::uint64_t> file_limit) {
  auto text = detail::labelled(ws::utf8_replace_invalid(report.stdout_tail), ws::utf8_replace_invalid(report.stderr_tail),
                               std::string(empty)) +
              "\n" + state;
  if (const auto code = job_exit_code(report)) {
    const long long exit_code = *code;
    text += "\n[exit code: " + std::to_string(exit_code) + "]" + detail::file_limit_status(static_cast<int>(exit_code), file_limit);
  }
  return text;
}

}  // namespace

Task<std::string> Shell::State::check_command(std::string command_id) {
  const auto report = co_await job_report(command_id, false);
  if (!report) co_return "[Error: unknown command ID " + python_repr(command_id) + "]";
  const bool finished = job_exit_code(*report).has_value();
  co_return job_text(*report, "(no output yet)", finished ? "[status: finished]" : "[status: running]",
                     options.max_file_bytes);
}

Task<std::string> Shell::State::stop_command(std::string command_id) {
  const auto report = co_await job_report(command_id, true);
  if (!report) co_return "[Error: unknown command ID " + python_repr(command_id) + "]";
  co_return job_text(*report, "(no output)", "[stopped]", options.max_file_bytes);
}

}  // namespace exedev::tools
