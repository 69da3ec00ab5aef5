// The request pipeline: the command table, and the three stages of a request (authorize:
// method, token, expiry, rate limit; prepare: body, lexing, resolution, cmds; execute: tag
// scope, the handler, its plan of host work, the lobby deadline).
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/flags.hpp"
#include "emulator/lexer.hpp"
#include "emulator/validation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace exedev::emulator {

std::optional<std::string> ssh_target(const std::vector<std::string>& args, std::vector<std::string>* rest) {
  std::size_t i = 0;
  if (i < args.size() && args[i] == "-l") i += 2;
  else if (i < args.size() && args[i].rfind("-l", 0) == 0) i += 1;
  if (i >= args.size()) return std::nullopt;
  std::string target = args[i];
  if (const auto at = target.rfind('@'); at != std::string::npos) target = target.substr(at + 1);
  const std::string suffix = ".exe.xyz";
  if (target.size() > suffix.size() && target.compare(target.size() - suffix.size(), suffix.size(), suffix) == 0) {
    target.resize(target.size() - suffix.size());
  }
  if (rest) rest->assign(args.begin() + static_cast<std::ptrdiff_t>(i + 1), args.end());
  return target;
}

// ---------------------------------------------------------------------------------------------
// The command table

const std::vector<Lobby::Command>& Lobby::command_table() {
  using K = FlagKind;
  const FlagSpec json{"json", K::boolean, {}, "JSON output (always on over HTTPS)"};
  static const std::vector<Command> table = {
      // Raw-args like ssh (addendum, correction 1): no flag parsing; words starting with `-` are skipped.
      {"help", &Lobby::cmd_help, true, {}, "help [command]", "show commands and their flags"},
      {"new", &Lobby::cmd_new, false,
       {{"name", K::string, {}, "VM name"}, {"image", K::string, {}, "container image (default exeuntu)"},
        {"command", K::string, {}, "auto, none or a custom command"}, {"prompt", K::string, {}, "prompt for Shelley"},
        json, {"no-email", K::boolean, {}, "do not send email"}, {"memory", K::string, {}, "memory size"},
        {"disk", K::string, {}, "disk size"}, {"cpu", K::uint, {}, "vCPUs"},
        {"setup-script", K::string, {}, "setup script (at most 10 KiB)"},
        {"comment", K::string, {}, "comment"}, {"env", K::repeated, {}, "KEY=VALUE (repeatable)"},
        {"tag", K::list, {}, "tag (repeatable or comma-separated)"},
        {"integration", K::list, {"int"}, "integration (repeatable or comma-separated)"},
        {"standalone", K::boolean, {"sandbox"}, "standalone VM with reserved resources"},
        {"pool", K::string, {}, "pool"}, {"no-pool", K::boolean, {}, "no pool"},
        {"egress", K::string, {}, "egress policy: all or integrations"}},
       "new [--name=NAME] [--image=IMAGE] [--tag=TAG] …", "create a VM"},
      {"cp", &Lobby::cmd_cp, false,
       {{"copy-tags", K::boolean, {}, "copy the source's tags (default true)"}, {"memory", K::string, {}, "memory"},
        {"disk", K::string, {}, "disk"}, {"cpu", K::uint, {}, "vCPUs"}, json,
        {"standalone", K::boolean, {"sandbox"}, "standalone copy"}, {"pool", K::string, {}, "pool"},
        {"no-pool", K::boolean, {}, "no pool"}, {"egress", K::string, {}, "egress policy: all or integrations"}},
       "cp <source-vm> [new-name] [--copy-tags=false]", "copy a VM"},
      {"ls", &Lobby::cmd_ls, false,
       {{"l", K::boolean, {}, "long"}, {"a", K::boolean, {}, "include team VMs"}, json},
       "ls [-l] [-a] [name|pattern ...]", "list VMs"},
      {"rm", &Lobby::cmd_rm, false, {json}, "rm <vm>...", "delete VMs"},
      {"pause", &Lobby::cmd_pause, false, {json}, "pause <vm>", "pause a VM (its processes stop)"},
      {"resume", &Lobby::cmd_resume, false, {json}, "resume <vm>", "resume a paused VM"},
      {"restart", &Lobby::cmd_restart, false, {json}, "restart <vm>", "restart a VM"},
      {"tag", &Lobby::cmd_tag, false, {{"d", K::boolean, {}, "delete the tags"}, json}, "tag [-d] <vm> <tag>...",
       "add or remove tags"},
      {"comment", &Lobby::cmd_comment, false, {json}, "comment <vm> <text...>", "set a VM's comment"},
      {"whoami", &Lobby::cmd_whoami, false, {json}, "whoami", "show the account and its keys"},
      {"ssh", &Lobby::cmd_ssh, true, {}, "ssh [-l user] [user@]vmname command...", "run a command on a VM"},
      {"ssh-key generate-api-key", &Lobby::cmd_generate_api_key, false,
       {{"label", K::string, {}, "key label"}, {"vm", K::string, {}, "limit the key to one VM"},
        {"tag", K::string, {}, "limit the key to VMs with this tag"},
        {"cmds", K::string, {}, "allowed commands, comma-separated"}, {"exp", K::string, {}, "expiry: <N>h|d|w|m|y or never"},
        json},
       "ssh-key generate-api-key [--label=NAME] [--vm=VM] [--tag=TAG] [--cmds=A,B] [--exp=30d]",
       "create an API token"},
  };
  static const std::vector<Command> all = [] {
    auto commands = table;
    for (auto& command : extra_commands()) commands.push_back(std::move(command));
    for (auto& command : ssh_key_commands()) commands.push_back(std::move(command));
    return commands;
  }();
  return all;
}

const Lobby::Command* Lobby::resolve(const std::vector<std::string>& words, std::size_t& length) const {
  const Command* best = nullptr;
  for (const Command& command : command_table()) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
      const auto space = command.name.find(' ', start);
      parts.push_back(command.name.substr(start, space - start));
      if (space == std::string::npos) break;
      start = space + 1;
    }
    if (parts.size() > words.size() || !std::equal(parts.begin(), parts.end(), words.begin())) continue;
    if (best == nullptr || parts.size() > length) {
      best = &command;
      length = parts.size();
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// The three stages of a request

std::variant<Reply, std::string> Lobby::authorize(std::string_view method, std::string_view authorization, Instant now) {
  if (method != "POST") {
    Reply reply = error_reply(405, "method not allowed");
    reply.headers.emplace_back("Allow", "POST");
    return reply;
  }
  const auto unauthorized = [](const std::string& message) {
    Reply reply = error_reply(401, message);
    reply.headers.emplace_back("WWW-Authenticate", "Bearer");
    return reply;
  };
  const auto space = authorization.find(' ');
  std::string scheme(authorization.substr(0, space));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (space == std::string_view::npos || scheme != "bearer") return unauthorized("missing or invalid Authorization header");
  const std::string token(trim_space(authorization.substr(space + 1)));
  if (token.empty()) return unauthorized("missing or invalid Authorization header");

  const Key* key = nullptr;
  if (const auto it = keys_.find(token); it != keys_.end() && token.size() <= 8192) {
    key = &it->second;
    if (key->spec.expires_at && now.wall >= *key->spec.expires_at) return unauthorized("invalid token: token has expired");
  } else {
    auto signed_key = authorize_signed(token, now);
    if (auto* refused = std::get_if<Reply>(&signed_key)) return std::move(*refused);
    key = std::get<const Key*>(signed_key);
  }
  if (key->spec.key_expires_at && now.wall >= *key->spec.key_expires_at) return error_reply(403, "SSH key has expired");
  // One bucket per signing key (exe.dev keys it by fingerprint): every exe0 token of a key shares it.
  const std::string& bucket = signed_keys_.count(token) ? key->fingerprint : token;
  const RateLimit& limits = config_.modes.rate_limit;
  if (limits.enabled && !limiter_.allow(limits, bucket, now.steady)) {
    Reply refused = error_reply(429, "rate limit exceeded");
    if (limits.retry_after) {
      const auto seconds = static_cast<long long>(std::ceil(limiter_.seconds_until_token(limits, bucket)));
      refused.headers.emplace_back("Retry-After", std::to_string(std::max(1LL, seconds)));
    }
    return refused;
  }
  return token;
}

std::variant<Reply, Prepared> Lobby::prepare(const std::string& token, std::string_view body) const {
  if (body.find('\0') != std::string_view::npos) return error_reply(400, "request body must not contain null bytes");
  const auto line = trim_space(body);
  if (line.empty()) return error_reply(400, "missing command in request body");
  LexResult lexed = lex(line);
  if (lexed.error) return error_reply(400, "invalid command syntax");
  // Words that lex to nothing (`''`) leave no command, checked again after splitting.
  if (lexed.words.empty()) return error_reply(400, "missing command in request body");

  Prepared prepared;
  prepared.token = token;
  prepared.words = std::move(lexed.words);
  std::size_t length = 0;
  const Command* command = resolve(prepared.words, length);
  if (command == nullptr) return error_reply(404, "unknown command");
  prepared.command = command->name;
  prepared.arguments.assign(prepared.words.begin() + static_cast<std::ptrdiff_t>(length), prepared.words.end());

  // The VM the request names, for the `ssh <vm>` cmds form, faults and records (help names none).
  if (command->name == "ssh") {
    prepared.vm = ssh_target(prepared.arguments, nullptr).value_or("");
  } else if (!command->raw_args) {
    std::string ignored;
    if (const auto flags = FlagSet(command->flags).parse(preparse_flags(prepared.arguments), ignored)) {
      if (command->name == "new") prepared.vm = flags->str("name");
      else if (command->name == "exe0-to-exe1") prepared.vm = flags->str("vm");  // never the token
      else if (command->name != "ls" && !flags->positional.empty()) prepared.vm = flags->positional.front();
    }
  }

  const Key* found = key_of(token);
  if (found == nullptr) return error_reply(401, "invalid token");
  const Key& key = *found;
  if (!key.all_commands) {
    const auto& cmds = key.spec.cmds ? *key.spec.cmds : default_cmds;
    const bool allowed = std::any_of(cmds.begin(), cmds.end(), [&](const std::string& entry) {
      return entry == prepared.command || (prepared.command == "ssh" && entry == "ssh " + prepared.vm);
    });
    if (!allowed) return error_reply(403, "command not allowed by token permissions");
  }
  return prepared;
}

Step Lobby::execute(const Prepared& request, SteadyTime started, Instant now) {
  const Key* key = key_of(request.token);
  if (key == nullptr) return Step{{}, fail("SSH key was removed")};
  std::size_t length = 0;
  const Command* command = resolve(request.words, length);
  // Tag-scoped keys are deny-by-default (§1.3, §2.4).
  if (key->spec.tag && !allowed_for_tag_scoped_keys(command->name)) {
    return Step{{}, fail("command not allowed by SSH key permissions")};
  }
  now_ = now;
  auto result = (this->*(command->handler))(*key, request);
  Step step{take_plan(), Reply{}};
  if (auto* plan = std::get_if<SshPlan>(&result)) {
    step.answer = std::move(*plan);
  } else if (creating_) {
    // new, cp: the VM exists once the host has made its directory (create_vm planned it).
    awaiting_.at(*creating_).started = started;
    step.answer = AwaitHost{*creating_};
    creating_.reset();
  } else {
    step.answer = within_deadline(std::get<Reply>(std::move(result)), started, now);
  }
  return step;
}

Json Lobby::command_help(const Command& command) {
  Json flags = Json::array();
  for (const FlagSpec& flag : command.flags) flags.push_back({{"name", "--" + flag.name}, {"usage", flag.usage}});
  return {{"command", command.name}, {"usage", command.usage}, {"description", command.description}, {"flags", flags}};
}

std::optional<ParsedFlags> Lobby::parse_command_flags(const Prepared& request, std::optional<Reply>& error) const {
  std::size_t length = 0;
  const Command& command = *resolve(request.words, length);
  std::string message;
  auto parsed = FlagSet(command.flags).parse(preparse_flags(request.arguments), message);
  if (!parsed) {
    // `<command> --help` prints the command's help, as the lobby does.
    error = message == "flag: help requested" ? ok(command_help(command)) : fail("flag parsing error: " + message);
  }
  return parsed;
}

}  // namespace exedev::emulator
