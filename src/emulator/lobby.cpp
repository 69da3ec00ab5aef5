#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/flags.hpp"
#include "emulator/lexer.hpp"
#include "emulator/processes.hpp"
#include "emulator/validation.hpp"

#include "common/base64.hpp"
#include "common/random_ids.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fnmatch.h>
#include <fstream>
#include <random>
#include <set>
#include <system_error>

namespace exedev::emulator {

namespace {

const std::vector<std::string> default_cmds = {"help", "ls", "new", "whoami", "ssh-key list", "share show",
                                               "exe0-to-exe1"};
constexpr const char* region = "lax";
constexpr const char* region_display = "Los Angeles, USA";
constexpr std::uint64_t gib = 1024ull * 1024 * 1024;

}  // namespace

// Helpers shared with the other files of the lobby's commands (lobby_internal.hpp).

std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

Reply json_reply(unsigned status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.headers = {{"Content-Type", "application/json; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}};
  // The lobby trims its output and ends it with one newline unless it is empty.
  const auto text = trim_space(body);
  reply.body = text.empty() ? std::string() : std::string(text) + "\n";
  return reply;
}

Reply ok(const Json& json) { return json_reply(200, dump(json)); }
Reply fail(const std::string& message) { return error_reply(422, message); }

namespace {

// The egress flag is not documented by exe.dev; the emulator names it `--egress` (docs/emulator.md).
std::optional<Reply> refuse_egress(const std::string& egress) {
  if (egress == "all" || egress == "integrations") return std::nullopt;
  return fail(fmt::format("invalid --egress \"{}\": must be all or integrations", egress));
}

}  // namespace

namespace {

std::string new_token() { return "exe1." + detail::random_chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 26); }
std::string new_id() { return detail::random_hex(8); }

}  // namespace

std::string rfc3339(SysClock::time_point t) {
  const std::time_t secs = SysClock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

namespace {

std::int64_t to_ms(SysClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
SysClock::time_point from_ms(std::int64_t ms) { return SysClock::time_point(std::chrono::milliseconds(ms)); }

}  // namespace

std::string host_of(const std::string& vm) { return vm + ".exe.xyz"; }

namespace {

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) out += separator;
    out += words[i];
  }
  return out;
}

}  // namespace

bool has_tag(const VMRecord& vm, const std::string& tag) {
  return std::find(vm.tags.begin(), vm.tags.end(), tag) != vm.tags.end();
}

namespace {

Json new_details(const VMRecord& vm) {
  Json json;
  json["vm_name"] = vm.name;
  json["tags"] = vm.tags;
  json["ssh_command"] = "ssh " + host_of(vm.name);
  json["ssh_dest"] = host_of(vm.name);
  json["ssh_host"] = host_of(vm.name);
  json["ssh_port"] = 22;
  json["https_url"] = "https://" + host_of(vm.name);
  json["proxy_port"] = 80;
  if (vm.image == "exeuntu") {
    json["shelley_url"] = "https://" + vm.name + ".shelley.exe.xyz";
    json["vscode_url"] = "vscode://vscode-remote/ssh-remote+" + host_of(vm.name) + "/home/exedev";
  }
  json["xterm_url"] = "https://" + vm.name + ".xterm.exe.xyz";
  return json;
}

// The target of `ssh [-l user] [user@]vmname[.exe.xyz] …`; sets `rest` to the command words.
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

}  // namespace

Reply error_reply(unsigned status, const std::string& message) {
  return json_reply(status, dump(Json{{"error", message}}));
}

// ---------------------------------------------------------------------------------------------
// Command table

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
// Construction and persistence

Lobby::Lobby(LobbyConfig config) : config_(std::move(config)) {
  std::filesystem::create_directories(config_.state_dir / "vms");
  load();
  if (!config_.token.empty()) default_token_ = config_.token;
  if (default_token_.empty()) default_token_ = new_token();
  if (!keys_.count(default_token_)) {
    Key key;
    key.token = default_token_;
    key.all_commands = true;
    key.spec.label = "emulator";
    add_key(std::move(key));
  }
  for (auto& [token, spec] : config_.tokens) {
    Key key;
    key.token = token;
    key.spec = spec;
    keys_.erase(token);
    add_key(std::move(key));
  }
  persist();
}

Lobby::~Lobby() = default;

void Lobby::load() {
  const auto path = config_.state_dir / "emulator-state.json";
  std::ifstream in(path);
  if (!in) return;
  try {
    load_from(Json::parse(in));
  } catch (const Json::parse_error&) {
    // Not e.what(): it quotes the file, which holds tokens.
    throw std::runtime_error("cannot read the emulator state in " + path.string() + ": not valid JSON");
  } catch (const Json::exception& e) {
    throw std::runtime_error("cannot read the emulator state in " + path.string() + ": " + e.what());
  }
}

void Lobby::load_from(const nlohmann::ordered_json& state) {
  default_token_ = state.value("token", std::string());
  next_generation_ = state.value("next_generation", std::uint64_t{1});
  for (const Json& j : state.at("vms")) {
    Vm vm;
    vm.id = j.at("id");
    vm.record.name = j.at("name");
    vm.record.status = j.at("status");
    vm.record.tags = j.at("tags").get<std::vector<std::string>>();
    vm.record.comment = j.at("comment");
    vm.record.image = j.at("image");
    vm.record.dir = config_.state_dir / "vms" / vm.id;
    vm.record.home = vm.record.dir / "home";
    vm.record.created_at = from_ms(j.at("created_at"));
    vm.record.cpus = j.at("cpus");
    vm.record.memory_bytes = j.at("memory_bytes");
    vm.record.disk_bytes = j.at("disk_bytes");
    vm.record.env = j.at("env").get<std::vector<std::string>>();
    vm.record.integrations = j.at("integrations").get<std::vector<std::string>>();
    vm.record.standalone = j.at("standalone");
    vm.record.egress = j.at("egress");
    vm.ready_at = from_ms(j.at("ready_at"));
    vm.boot_status = j.at("boot_status");
    vm.generation = j.at("generation");
    vm.share = j.value("share", std::string("private"));
    vm.proxy_port = j.value("proxy_port", 80u);
    for (const Json& link : j.value("share_links", Json::array())) {
      vm.share_links.push_back(ShareLink{link.at("token"), from_ms(link.at("created_at"))});
    }
    vms_.emplace(vm.record.name, std::move(vm));
  }
  for (const Json& j : state.at("keys")) {
    Key key;
    key.token = j.at("token");
    key.all_commands = j.at("all_commands");
    if (j.contains("cmds")) key.spec.cmds = j.at("cmds").get<std::vector<std::string>>();
    if (j.contains("tag")) key.spec.tag = j.at("tag").get<std::string>();
    if (j.contains("vm")) key.vm_scope = j.at("vm").get<std::string>();
    if (j.contains("expires_at")) key.spec.expires_at = from_ms(j.at("expires_at"));
    if (j.contains("key_expires_at")) key.spec.key_expires_at = from_ms(j.at("key_expires_at"));
    key.spec.label = j.at("label");
    key.fingerprint = j.at("fingerprint");
    key.public_key = j.at("public_key");
    keys_.emplace(key.token, std::move(key));
  }
}

void Lobby::persist() const {
  Json state;
  state["version"] = 1;
  state["token"] = default_token_;
  state["next_generation"] = next_generation_;
  state["vms"] = Json::array();
  for (const auto& [name, vm] : vms_) {
    state["vms"].push_back({{"id", vm.id}, {"name", name}, {"status", vm.record.status}, {"tags", vm.record.tags},
                            {"comment", vm.record.comment}, {"image", vm.record.image},
                            {"created_at", to_ms(vm.record.created_at)}, {"cpus", vm.record.cpus},
                            {"memory_bytes", vm.record.memory_bytes}, {"disk_bytes", vm.record.disk_bytes},
                            {"env", vm.record.env}, {"integrations", vm.record.integrations},
                            {"standalone", vm.record.standalone}, {"egress", vm.record.egress},
                            {"ready_at", to_ms(vm.ready_at)}, {"boot_status", vm.boot_status},
                            {"generation", vm.generation}, {"share", vm.share}, {"proxy_port", vm.proxy_port}});
    Json links = Json::array();
    for (const ShareLink& link : vm.share_links) links.push_back({{"token", link.token}, {"created_at", to_ms(link.created_at)}});
    state["vms"].back()["share_links"] = std::move(links);
  }
  state["keys"] = Json::array();
  for (const auto& [token, key] : keys_) {
    Json j{{"token", token}, {"all_commands", key.all_commands}, {"label", key.spec.label},
           {"fingerprint", key.fingerprint}, {"public_key", key.public_key}};
    if (key.spec.cmds) j["cmds"] = *key.spec.cmds;
    if (key.spec.tag) j["tag"] = *key.spec.tag;
    if (key.vm_scope) j["vm"] = *key.vm_scope;
    if (key.spec.expires_at) j["expires_at"] = to_ms(*key.spec.expires_at);
    if (key.spec.key_expires_at) j["key_expires_at"] = to_ms(*key.spec.key_expires_at);
    state["keys"].push_back(std::move(j));
  }
  // Write then rename, so a crash never leaves half a file behind.
  const auto path = config_.state_dir / "emulator-state.json";
  const auto temporary = config_.state_dir / "emulator-state.json.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << state.dump(1) << '\n';
    if (!out) throw std::runtime_error("cannot write " + temporary.string());
  }
  std::filesystem::rename(temporary, path);
}

std::string Lobby::add_key(Key key) {
  if (key.spec.label.empty()) key.spec.label = fmt::format("api-key-{}", keys_.size() + 1);
  // An OpenSSH ed25519 public key blob: length-prefixed type name, then 32 key bytes.
  std::string blob("\0\0\0\x0bssh-ed25519\0\0\0\x20", 19);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 32; ++i) blob += static_cast<char>(byte(detail::random_engine()));
  key.public_key = "ssh-ed25519 " + detail::base64_encode(blob);
  key.fingerprint = "SHA256:" + detail::random_chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 43);
  const std::string token = key.token;
  keys_[token] = std::move(key);
  return token;
}

// ---------------------------------------------------------------------------------------------
// The three stages of a request

std::variant<Reply, std::string> Lobby::authorize(std::string_view method, std::string_view authorization) {
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

  std::lock_guard lock(mutex_);
  const auto it = keys_.find(token);
  if (token.size() > 8192 || it == keys_.end()) return unauthorized("invalid token");
  const Key& key = it->second;
  const auto now = SysClock::now();
  if (key.spec.expires_at && now >= *key.spec.expires_at) return unauthorized("invalid token: token has expired");
  if (key.spec.key_expires_at && now >= *key.spec.key_expires_at) return error_reply(403, "SSH key has expired");
  const RateLimit& limits = config_.modes.rate_limit;
  if (limits.enabled && !limiter_.allow(limits, token, Clock::now())) {
    Reply refused = error_reply(429, "rate limit exceeded");
    if (limits.retry_after) {
      const auto seconds = static_cast<long long>(std::ceil(limiter_.seconds_until_token(limits, token)));
      refused.headers.emplace_back("Retry-After", std::to_string(std::max(1LL, seconds)));
    }
    return refused;
  }
  return token;
}

std::variant<Reply, Prepared> Lobby::prepare(const std::string& token, std::string_view body) {
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

  std::lock_guard lock(mutex_);
  const auto key_it = keys_.find(token);
  if (key_it == keys_.end()) return error_reply(401, "invalid token");
  const Key& key = key_it->second;
  if (!key.all_commands) {
    const auto& cmds = key.spec.cmds ? *key.spec.cmds : default_cmds;
    const bool allowed = std::any_of(cmds.begin(), cmds.end(), [&](const std::string& entry) {
      return entry == prepared.command || (prepared.command == "ssh" && entry == "ssh " + prepared.vm);
    });
    if (!allowed) return error_reply(403, "command not allowed by token permissions");
  }
  return prepared;
}

std::variant<Reply, SshPlan> Lobby::execute(const Prepared& request, Clock::time_point started) {
  std::lock_guard lock(mutex_);
  const auto key_it = keys_.find(request.token);
  if (key_it == keys_.end()) return fail("SSH key was removed");
  std::size_t length = 0;
  const Command* command = resolve(request.words, length);
  // Tag-scoped keys are deny-by-default (§1.3, §2.4).
  if (key_it->second.spec.tag && !allowed_for_tag_scoped_keys(command->name)) {
    return fail("command not allowed by SSH key permissions");
  }
  auto result = (this->*(command->handler))(key_it->second, request);
  if (auto* reply = std::get_if<Reply>(&result); reply && reply->status != 200) {
    if (Clock::now() - started >= config_.modes.lobby_deadline) return error_reply(504, "command timed out");
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Helpers of the handlers

Lobby::Vm* Lobby::find_visible(const Key& key, const std::string& name) {
  const auto it = vms_.find(name);
  if (it == vms_.end()) return nullptr;
  if (key.spec.tag && !has_tag(it->second.record, *key.spec.tag)) return nullptr;
  if (key.vm_scope && *key.vm_scope != name) return nullptr;
  return &it->second;
}

bool Lobby::vm_ready(const Vm& vm) const { return SysClock::now() >= vm.ready_at; }

std::string Lobby::vm_status(const Vm& vm) const { return vm_ready(vm) ? vm.record.status : vm.boot_status; }

std::string Lobby::unused_name() const {
  static const char* const adjectives[] = {"amber", "brisk", "calm", "dusty", "eager", "fuzzy", "gentle", "hazy",
                                           "icy", "jolly", "keen", "lucky", "mellow", "nimble", "quiet", "rapid"};
  static const char* const nouns[] = {"otter", "falcon", "maple", "harbor", "comet", "meadow", "pebble", "raven",
                                      "summit", "tulip", "walrus", "willow", "yak", "zephyr", "badger", "cedar"};
  std::uniform_int_distribution<int> pick(0, 15);
  std::uniform_int_distribution<int> number(10, 9999);
  while (true) {
    std::string name = fmt::format("{}-{}-{}", adjectives[pick(detail::random_engine())], nouns[pick(detail::random_engine())], number(detail::random_engine()));
    if (!vms_.count(name)) return name;
  }
}

Lobby::Vm& Lobby::add_vm(Vm vm) {
  const std::string name = vm.record.name;
  auto& stored = vms_[name] = std::move(vm);
  persist();
  return stored;
}

void Lobby::remove_vm(const std::string& name) {
  const auto it = vms_.find(name);
  kill_vm_processes(it->second.id);
  std::error_code ignored;
  std::filesystem::remove_all(it->second.record.dir, ignored);
  vms_.erase(it);
  persist();
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

// ---------------------------------------------------------------------------------------------
// Handlers. Each runs with mutex_ held.

std::variant<Reply, SshPlan> Lobby::cmd_help(const Key&, const Prepared& request) {
  std::vector<std::string> topic;
  std::copy_if(request.arguments.begin(), request.arguments.end(), std::back_inserter(topic),
               [](const std::string& word) { return word.empty() || word[0] != '-'; });
  if (!topic.empty()) {
    std::size_t length = 0;
    const Command* command = resolve(topic, length);
    if (command == nullptr) return fail(fmt::format("unknown command \"{}\"", join(topic, " ")));
    return ok(command_help(*command));
  }
  Json commands = Json::array();
  for (const Command& command : command_table()) {
    commands.push_back({{"name", command.name}, {"usage", command.usage}, {"description", command.description}});
  }
  return ok({{"commands", commands}});
}

std::variant<Reply, SshPlan> Lobby::cmd_new(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (!flags->positional.empty()) return fail(fmt::format("unexpected argument \"{}\"", flags->positional.front()));
  if (key.vm_scope) return fail(fmt::format("SSH key scoped to VM \"{}\" cannot create VMs", *key.vm_scope));
  for (const char* stdin_flag : {"prompt", "setup-script"}) {
    if (flags->str(stdin_flag) == "/dev/stdin") {
      return fail(fmt::format("--{}=/dev/stdin needs an SSH session; it is not available over HTTPS", stdin_flag));
    }
  }
  if (flags->str("setup-script").size() > 10 * 1024) return fail("--setup-script must be at most 10 KiB");
  const bool standalone = flags->boolean("standalone");
  if (standalone && (flags->has("pool") || flags->has("no-pool"))) {
    return fail("--standalone cannot be combined with --pool or --no-pool");
  }
  const std::string egress = flags->str("egress", "all");
  if (auto refused = refuse_egress(egress)) return *refused;

  std::string name = flags->str("name");
  if (name.empty()) {
    name = unused_name();
  } else {
    if (auto message = validate_vm_name(name)) return fail(*message);
    if (vms_.count(name)) return fail(fmt::format("VM name \"{}\" is not available", name));
  }
  std::string image = flags->str("image", "exeuntu");
  if (image == "boldsoftware/exeuntu") image = "exeuntu";
  if (image.empty() || std::any_of(image.begin(), image.end(), [](unsigned char c) { return c <= ' ' || c == 0x7F; })) {
    return fail(fmt::format("invalid image: \"{}\"", image));
  }

  VMRecord record;
  record.name = name;
  record.image = image;
  record.cpus = static_cast<unsigned>(flags->uint("cpu").value_or(2));
  if (record.cpus < 1 || record.cpus > 16) return fail("--cpu must be between 1 and 16");
  record.memory_bytes = 8 * gib;
  record.disk_bytes = 20 * gib;
  for (const auto& [flag, target, min, max] :
       {std::tuple{"memory", &record.memory_bytes, 1 * gib, 64 * gib}, std::tuple{"disk", &record.disk_bytes, 4 * gib, 500 * gib}}) {
    if (!flags->has(flag)) continue;
    const auto size = parse_size(flags->str(flag));
    if (!size) return fail(fmt::format("invalid --{} \"{}\": use N, NGB, NMB, …", flag, flags->str(flag)));
    if (*size < min) return fail(fmt::format("--{} must be at least {}GB", flag, min / gib));
    if (*size > max) return fail(fmt::format("--{} cannot exceed {}GB", flag, max / gib));
    *target = *size;
  }
  record.comment = std::string(trim_space(flags->str("comment")));
  if (auto message = validate_comment(record.comment)) return fail(*message);
  for (const std::string& entry : flags->values("env")) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) return fail(fmt::format("invalid --env \"{}\": must be KEY=VALUE", entry));
    record.env.push_back(entry);
  }
  std::set<std::string> tags;
  for (const std::string& tag : flags->list("tag")) {
    if (auto message = validate_tag(tag)) return fail(*message);
    if (key.spec.tag && tag != *key.spec.tag) {
      return fail(fmt::format("--tag SSH key scoped to tag \"{}\" can only use --tag={}", *key.spec.tag, *key.spec.tag));
    }
    tags.insert(tag);
  }
  if (key.spec.tag) tags.insert(*key.spec.tag);
  record.tags.assign(tags.begin(), tags.end());
  for (const std::string& integration : flags->list("integration")) {
    if (!is_valid_tag(integration)) return fail(fmt::format("integration \"{}\" not found", integration));
    record.integrations.push_back(integration);
  }
  record.standalone = standalone;
  record.egress = egress;
  record.created_at = SysClock::now();

  Vm vm;
  vm.id = new_id();
  vm.record = std::move(record);
  vm.record.status = "running";
  vm.record.dir = config_.state_dir / "vms" / vm.id;
  vm.record.home = vm.record.dir / "home";
  vm.boot_status = "creating";
  vm.ready_at = SysClock::now() + config_.modes.boot_delay;
  vm.generation = next_generation_++;
  std::filesystem::create_directories(vm.record.home);
  const Vm& stored = add_vm(std::move(vm));
  return ok(new_details(stored.record));
}

std::variant<Reply, SshPlan> Lobby::cmd_cp(const Key& key, const Prepared& request) {
  const auto begun = Clock::now();
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  const auto& args = flags->positional;
  if (args.empty() || args.size() > 2) return fail("usage: cp <source-vm> [new-name] [--copy-tags=false]");
  const Vm* source = find_visible(key, args[0]);
  if (source == nullptr) return fail(fmt::format("VM \"{}\" not found", args[0]));
  if (key.vm_scope) return fail(fmt::format("SSH key scoped to VM \"{}\" cannot create VMs", *key.vm_scope));
  if (flags->boolean("standalone") && (flags->has("pool") || flags->has("no-pool"))) {
    return fail("--standalone cannot be combined with --pool or --no-pool");
  }
  std::string name = args.size() == 2 ? args[1] : unused_name();
  if (args.size() == 2) {
    if (auto message = validate_vm_name(name)) return fail(*message);
    if (vms_.count(name)) return fail(fmt::format("name \"{}\" is not available", name));
  }
  Vm copy;
  copy.record = source->record;
  copy.record.name = name;
  copy.record.status = "running";
  copy.record.created_at = SysClock::now();
  if (flags->has("cpu")) {
    copy.record.cpus = static_cast<unsigned>(*flags->uint("cpu"));
    if (copy.record.cpus < 1 || copy.record.cpus > 16) return fail("--cpu must be between 1 and 16");
  }
  for (const auto& [flag, target] : {std::pair{"memory", &copy.record.memory_bytes}, std::pair{"disk", &copy.record.disk_bytes}}) {
    if (!flags->has(flag)) continue;
    const auto size = parse_size(flags->str(flag));
    if (!size || *size < gib) return fail(fmt::format("invalid --{} \"{}\"", flag, flags->str(flag)));
    *target = *size;
  }
  if (flags->has("standalone")) copy.record.standalone = flags->boolean("standalone");
  if (flags->has("egress")) {
    if (auto refused = refuse_egress(flags->str("egress"))) return *refused;
    copy.record.egress = flags->str("egress");
  }
  std::set<std::string> tags;
  if (flags->boolean("copy-tags", true)) tags.insert(copy.record.tags.begin(), copy.record.tags.end());
  if (key.spec.tag) tags.insert(*key.spec.tag);
  copy.record.tags.assign(tags.begin(), tags.end());
  copy.id = new_id();
  copy.record.dir = config_.state_dir / "vms" / copy.id;
  copy.record.home = copy.record.dir / "home";
  std::error_code ec;
  std::filesystem::copy(source->record.dir, copy.record.dir,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove_all(copy.record.dir, ignored);
    return fail(fmt::format("failed to copy \"{}\": {}", args[0], ec.message()));
  }
  copy.boot_status = "starting";
  copy.ready_at = SysClock::now() + config_.modes.boot_delay;
  copy.generation = next_generation_++;
  const std::string source_name = source->record.name;
  const Vm& stored = add_vm(std::move(copy));
  if (config_.modes.cp_response == CpResponse::new_like) {
    Json json = new_details(stored.record);
    json["source"] = source_name;
    return ok(json);
  }
  return ok({{"name", name}, {"state", "starting"}, {"source", source_name}, {"ssh", host_of(name)},
             {"elapsed", std::chrono::duration<double>(Clock::now() - begun).count()}});
}

std::variant<Reply, SshPlan> Lobby::cmd_ls(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  Json list = Json::array();
  for (const auto& [name, vm] : vms_) {  // std::map: sorted by name, each VM once
    if (find_visible(key, name) == nullptr) continue;
    if (!flags->positional.empty()) {
      // Init-captures: Clang 14 cannot capture structured bindings.
      const bool matched = std::any_of(flags->positional.begin(), flags->positional.end(),
                                       [&name = name, &vm = vm](const std::string& pattern) {
        if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
        return std::any_of(vm.record.tags.begin(), vm.record.tags.end(),
                           [&](const std::string& tag) { return ::fnmatch(pattern.c_str(), tag.c_str(), 0) == 0; });
      });
      if (!matched) continue;
    }
    Json item;
    item["vm_name"] = name;
    item["ssh_dest"] = host_of(name);
    item["ssh_host"] = host_of(name);
    item["status"] = vm_status(vm);
    item["region"] = region;
    item["region_display"] = region_display;
    item["https_url"] = "https://" + host_of(name);
    if (vm.record.image != "exeuntu") item["image"] = vm.record.image;
    else item["shelley_url"] = "https://" + name + ".shelley.exe.xyz";
    if (!vm.record.tags.empty()) item["tags"] = vm.record.tags;
    if (!vm.record.comment.empty()) item["comment"] = vm.record.comment;
    item["created_at"] = rfc3339(vm.record.created_at);
    item["disk_capacity_bytes"] = vm.record.disk_bytes;
    item["memory_capacity_bytes"] = vm.record.memory_bytes;
    item["allocated_cpus"] = vm.record.cpus;
    list.push_back(std::move(item));
  }
  Json json{{"vms", list}};
  if (flags->boolean("a")) json["team_vms"] = Json::array();
  return ok(json);
}

std::variant<Reply, SshPlan> Lobby::cmd_rm(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail("please specify at least one VM name to delete");
  std::vector<std::string> names;
  for (const std::string& name : flags->positional) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  // rm reports each failure as its own JSON line and still succeeds (spec §3.4).
  std::string body;
  Json deleted = Json::array();
  Json failed = Json::array();
  for (const std::string& name : names) {
    if (find_visible(key, name) == nullptr) {
      body += dump(Json{{"error", fmt::format("VM \"{}\" not found", name)}}) + "\n";
      failed.push_back(name);
      continue;
    }
    remove_vm(name);
    deleted.push_back(name);
  }
  body += dump(Json{{"deleted", deleted}, {"failed", failed}});
  return json_reply(200, body);
}

Lobby::Vm* Lobby::only_vm_argument(const Key& key, const Prepared& request, const char* usage,
                                   std::optional<Reply>& error) {
  const auto flags = parse_command_flags(request, error);
  if (!flags) return nullptr;
  if (flags->positional.size() != 1) {
    error = fail(usage);
    return nullptr;
  }
  Vm* vm = find_visible(key, flags->positional[0]);
  if (vm == nullptr) error = fail(fmt::format("VM \"{}\" not found", flags->positional[0]));
  return vm;
}

std::variant<Reply, SshPlan> Lobby::cmd_pause(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  Vm* vm = only_vm_argument(key, request, "usage: pause <vm>", error);
  if (vm == nullptr) return *error;
  if (!vm_ready(*vm)) return fail(fmt::format("VM \"{}\" is in state \"{}\" and cannot be paused", vm->record.name, vm_status(*vm)));
  if (vm->record.status == "paused") return fail(fmt::format("VM \"{}\" is already paused", vm->record.name));
  stop_vm_processes(vm->id);
  vm->record.status = "paused";
  persist();
  return ok({{"vm_name", vm->record.name}, {"status", "paused"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_resume(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  Vm* vm = only_vm_argument(key, request, "usage: resume <vm>", error);
  if (vm == nullptr) return *error;
  if (vm->record.status != "paused") return fail(fmt::format("VM \"{}\" is not paused", vm->record.name));
  signal_vm_processes(vm->id, SIGCONT);
  vm->record.status = "running";
  persist();
  return ok({{"vm_name", vm->record.name}, {"status", "running"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_restart(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  Vm* vm = only_vm_argument(key, request, "usage: restart <vm>", error);
  if (vm == nullptr) return *error;
  if (!vm_ready(*vm)) return fail(fmt::format("VM is in state \"{}\" and cannot be restarted", vm_status(*vm)));
  kill_vm_processes(vm->id);
  vm->record.status = "running";
  vm->boot_status = "starting";
  vm->ready_at = SysClock::now() + config_.modes.boot_delay;
  vm->generation = next_generation_++;
  persist();
  return ok({{"vm_name", vm->record.name}, {"status", "restarted"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_tag(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (key.spec.tag) return fail(fmt::format("SSH key scoped to tag \"{}\" cannot modify tags", *key.spec.tag));
  const auto& args = flags->positional;
  if (args.size() < 2) return fail("usage: tag [-d] <vm> <tag>...");
  Vm* vm = find_visible(key, args[0]);
  if (vm == nullptr) return fail(fmt::format("vm \"{}\" not found", args[0]));
  const bool remove = flags->boolean("d");
  std::set<std::string> seen;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (auto message = validate_tag(args[i])) return fail(*message);
    if (!seen.insert(args[i]).second) return fail(fmt::format("tag \"{}\" specified more than once", args[i]));
    const bool present = has_tag(vm->record, args[i]);
    if (!remove && present) return fail(fmt::format("tag \"{}\" already exists on vm", args[i]));
    if (remove && !present) return fail(fmt::format("tag \"{}\" not found on vm", args[i]));
  }
  auto& tags = vm->record.tags;
  for (const std::string& tag : seen) {
    if (remove) tags.erase(std::remove(tags.begin(), tags.end(), tag), tags.end());
    else tags.push_back(tag);
  }
  std::sort(tags.begin(), tags.end());
  persist();
  return ok({{"vm_name", vm->record.name}, {"tags", tags}});
}

std::variant<Reply, SshPlan> Lobby::cmd_comment(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  const auto& args = flags->positional;
  if (args.size() < 2) return fail("usage: comment <vm> <text...>");
  Vm* vm = find_visible(key, args[0]);
  if (vm == nullptr) return fail(fmt::format("VM \"{}\" not found", args[0]));
  const std::string text(trim_space(join(std::vector<std::string>(args.begin() + 1, args.end()), " ")));
  if (auto message = validate_comment(text)) return fail(*message);
  vm->record.comment = text;
  persist();
  return ok({{"vm_name", vm->record.name}, {"comment", text}});
}

std::variant<Reply, SshPlan> Lobby::cmd_whoami(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  Json keys = Json::array();
  for (const auto& [token, other] : keys_) {
    if (key.spec.tag && other.spec.tag != key.spec.tag) continue;
    Json item{{"public_key", other.public_key}, {"fingerprint", other.fingerprint}};
    if (!other.spec.label.empty()) item["name"] = other.spec.label;
    item["current"] = false;  // over /exec there is no session key
    keys.push_back(std::move(item));
  }
  return ok({{"email", config_.email}, {"region", region}, {"region_display", region_display}, {"ssh_keys", keys}});
}

std::variant<Reply, SshPlan> Lobby::cmd_generate_api_key(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (!flags->positional.empty()) return fail(fmt::format("unexpected argument \"{}\"", flags->positional.front()));
  std::optional<std::string> vm = flags->has("vm") ? std::optional(flags->str("vm")) : std::nullopt;
  std::optional<std::string> tag = flags->has("tag") ? std::optional(flags->str("tag")) : std::nullopt;
  if (vm && tag) return fail("--vm and --tag cannot be used together");
  if (tag) {
    if (auto message = validate_tag(*tag)) return fail(*message);
  }
  // A new key is never less restricted than the calling one.
  if (key.spec.tag) {
    if (vm || (tag && *tag != *key.spec.tag)) {
      return fail(fmt::format("SSH key scoped to tag \"{}\" can only create keys with --tag={}", *key.spec.tag, *key.spec.tag));
    }
    tag = key.spec.tag;
  }
  if (key.vm_scope) {
    if (tag || (vm && *vm != *key.vm_scope)) {
      return fail(fmt::format("SSH key scoped to VM \"{}\" can only create keys with --vm={}", *key.vm_scope, *key.vm_scope));
    }
    vm = key.vm_scope;
  }
  if (vm && find_visible(key, *vm) == nullptr) return fail(fmt::format("VM \"{}\" not found", *vm));
  const std::string label = flags->str("label", vm ? "api-key-" + *vm : "api-key");
  for (const auto& [token, other] : keys_) {
    if (other.spec.label == label) return fail(fmt::format("a key named \"{}\" already exists; use a different --label", label));
  }
  Key created;
  created.token = new_token();
  created.spec.label = label;
  created.spec.tag = tag;
  created.vm_scope = vm;
  const std::vector<std::string> cmds = flags->list("cmds");
  const auto caller_allows = [&](const std::string& command) {
    if (key.all_commands) return true;
    const auto& allowed = key.spec.cmds ? *key.spec.cmds : default_cmds;
    return std::find(allowed.begin(), allowed.end(), command) != allowed.end();
  };
  for (const std::string& command : cmds) {
    if (!caller_allows(command)) {
      return fail(fmt::format("--cmds must be a subset of this key's commands; \"{}\" is not allowed", command));
    }
  }
  if (!cmds.empty()) created.spec.cmds = cmds;
  else if (!key.all_commands) created.spec.cmds = key.spec.cmds;  // the caller's (or the defaults)
  if (flags->has("exp")) {
    const auto expiry = parse_expiry(flags->str("exp"));
    if (!expiry.ok) return fail(fmt::format("invalid --exp \"{}\": use <N>h, <N>d, <N>w, <N>m, <N>y or never", flags->str("exp")));
    if (expiry.duration) created.spec.expires_at = SysClock::now() + *expiry.duration;
  }
  if (key.spec.expires_at && (!created.spec.expires_at || *created.spec.expires_at > *key.spec.expires_at)) {
    created.spec.expires_at = key.spec.expires_at;
  }
  const std::string token = add_key(std::move(created));
  persist();
  const Key& stored = keys_.at(token);
  Json json{{"label", label}, {"token", token}, {"namespace", "v0@exe.dev"}, {"fingerprint", stored.fingerprint}};
  if (stored.spec.expires_at) json["expires_at"] = rfc3339(*stored.spec.expires_at);
  return ok(json);
}

std::variant<Reply, SshPlan> Lobby::cmd_ssh(const Key& key, const Prepared& request) {
  std::vector<std::string> words;
  const auto target = ssh_target(request.arguments, &words);
  if (!target || target->empty()) return fail("usage: ssh [-l user] [user@]vmname command...");
  Vm* vm = find_visible(key, *target);
  if (vm == nullptr) return fail(fmt::format("VM \"{}\" not found", *target));
  if (words.empty()) return fail("ssh over HTTPS needs a command: interactive sessions need a PTY");
  SshPlan plan;
  plan.line = join(words, " ");
  if (vm->record.status == "paused") {
    if (config_.modes.paused_vm_ssh == PausedVmSsh::refuse) return fail(fmt::format("VM \"{}\" is paused", vm->record.name));
    signal_vm_processes(vm->id, SIGCONT);
    vm->record.status = "running";
    persist();
  }
  if (!vm_ready(*vm)) {
    if (config_.modes.unready_true_quirk && plan.line == "true") {
      plan.answer_without_running = true;
    } else {
      return fail("failed to connect to VM: dial tcp: connect: connection refused");
    }
  }
  plan.vm = vm->record.name;
  plan.vm_id = vm->id;
  plan.generation = vm->generation;
  plan.home = vm->record.home;
  plan.env = vm->record.env;
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Faults, modes, records, introspection

std::optional<Fault> Lobby::take_fault(const std::string& command, const std::string& vm) {
  std::lock_guard lock(mutex_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((!it->command.empty() && it->command != command) || (!it->vm.empty() && it->vm != vm)) continue;
    if (it->skip > 0) {
      --it->skip;
      return std::nullopt;
    }
    Fault fault = *it;
    if (--it->count == 0) faults_.erase(it);
    return fault;
  }
  return std::nullopt;
}

void Lobby::inject(Fault fault) {
  if (fault.count == 0) return;
  std::lock_guard lock(mutex_);
  faults_.push_back(std::move(fault));
}

void Lobby::clear_faults() {
  std::lock_guard lock(mutex_);
  faults_.clear();
}

Modes Lobby::modes() const {
  std::lock_guard lock(mutex_);
  return config_.modes;
}

void Lobby::set_modes(Modes modes) {
  std::lock_guard lock(mutex_);
  config_.modes = modes;
}

bool Lobby::vm_current(const std::string& vm_id, std::uint64_t generation) const {
  std::lock_guard lock(mutex_);
  return std::any_of(vms_.begin(), vms_.end(),
                     [&](const auto& entry) { return entry.second.id == vm_id && entry.second.generation == generation; });
}

void Lobby::record(CommandRecord record) {
  std::lock_guard lock(mutex_);
  records_.push_back(std::move(record));
}

std::vector<CommandRecord> Lobby::commands() const {
  std::lock_guard lock(mutex_);
  return records_;
}

void Lobby::clear_commands() {
  std::lock_guard lock(mutex_);
  records_.clear();
}

std::vector<VMRecord> Lobby::vms() const {
  std::lock_guard lock(mutex_);
  std::vector<VMRecord> out;
  for (const auto& [name, vm] : vms_) {
    out.push_back(vm.record);
    out.back().status = vm_status(vm);
  }
  return out;
}

std::optional<VMRecord> Lobby::vm(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(name);
  if (it == vms_.end()) return std::nullopt;
  VMRecord record = it->second.record;
  record.status = vm_status(it->second);
  return record;
}

std::optional<std::string> Lobby::vm_id(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(name);
  return it == vms_.end() ? std::nullopt : std::optional(it->second.id);
}

std::string Lobby::default_token() const {
  std::lock_guard lock(mutex_);
  return default_token_;
}

std::string Lobby::issue_token(TokenSpec spec) {
  std::lock_guard lock(mutex_);
  if (spec.tag) {
    if (auto message = validate_tag(*spec.tag)) throw std::invalid_argument(*message);
  }
  Key key;
  key.token = new_token();
  key.spec = std::move(spec);
  const std::string token = add_key(std::move(key));
  persist();
  return token;
}

void Lobby::revoke_token(const std::string& token) {
  std::lock_guard lock(mutex_);
  keys_.erase(token);
  persist();
}

void Lobby::reload() {
  std::lock_guard lock(mutex_);
  vms_.clear();
  keys_.clear();
  faults_.clear();
  limiter_.clear();
  load();
}

void Lobby::kill_all_processes() {
  std::lock_guard lock(mutex_);
  for (const auto& [name, vm] : vms_) kill_vm_processes(vm.id);
}

}  // namespace exedev::emulator
