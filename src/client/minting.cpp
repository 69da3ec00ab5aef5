#include "client/minting.hpp"

#include "common/base64.hpp"
#include "ssh/signer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace exedev::detail {

namespace {

constexpr std::int64_t earliest = 946684800;  // exe.dev's range for exp and nbf
constexpr std::int64_t latest = 4102444800;

std::int64_t unix_seconds(WallClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

std::string exe0_payload(std::optional<std::int64_t> exp, std::optional<std::int64_t> nbf,
                         const std::optional<std::vector<std::string>>& cmds) {
  nlohmann::ordered_json payload = nlohmann::ordered_json::object();
  for (const auto& [name, value] : {std::pair{"exp", exp}, std::pair{"nbf", nbf}}) {
    if (!value) continue;
    if (*value < earliest || *value > latest) {
      throw std::invalid_argument(fmt::format("an exe0 token's {} must lie between {} and {}", name, earliest, latest));
    }
    payload[name] = *value;
  }
  if (cmds) {
    if (std::any_of(cmds->begin(), cmds->end(), [](const std::string& c) { return c.empty(); })) {
      throw std::invalid_argument("an exe0 token's cmds must not hold an empty command");
    }
    payload["cmds"] = *cmds;
  }
  // Compact, no newline: exe.dev refuses white space around the payload and any line break.
  return payload.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
}

std::string exe0_token(std::string_view payload, std::string_view sshsig_blob) {
  return "exe0." + base64url_encode(payload) + "." + base64url_encode(sshsig_blob);
}

std::string vm_namespace(std::string_view vm) { return fmt::format("v0@{}.exe.xyz", vm); }

bool needs_renewal(WallClock::time_point expires, WallClock::time_point now, std::chrono::seconds lifetime) {
  const auto margin = std::min<std::chrono::seconds>(lifetime / 3, std::chrono::seconds(60));
  return now + margin >= expires;
}

const std::vector<std::string>& client_commands() {
  static const std::vector<std::string> commands = {
      "new", "cp", "ls", "rm", "pause", "resume", "restart", "tag", "comment", "whoami", "ssh", "resize", "rename",
      "share show", "share port", "share set-public", "share set-private", "share add-link", "share remove-link",
      "share add", "share remove", "share access allow", "share access disallow"};
  return commands;
}

TokenMinter::TokenMinter(TokenMinting options, Logger logger) : options_(std::move(options)), logger_(std::move(logger)) {
  if (options_.lifetime < std::chrono::seconds(10)) throw std::invalid_argument("TokenMinting::lifetime must be 10 s or more");
  // A bad cmds list is the caller's mistake: say so now, not at the first request.
  (void)exe0_payload(std::nullopt, std::nullopt, options_.cmds);
}

TokenMinter::~TokenMinter() = default;

const ssh::Signer& TokenMinter::signer() {
  if (!signer_) {
    const auto warn = [this](std::string_view note) {
      if (logger_) logger_(LogLevel::warning, note);
    };
    signer_ = ssh::Signer::choose(options_.key, options_.ssh_config_host, warn);
  }
  return *signer_;
}

std::string TokenMinter::exec_token(WallClock::time_point now) {
  const std::lock_guard lock(mutex_);
  if (token_.empty() || needs_renewal(expires_, now, options_.lifetime)) {
    const auto expires = now + options_.lifetime;
    const auto payload = exe0_payload(unix_seconds(expires), std::nullopt, options_.cmds ? options_.cmds : client_commands());
    token_ = exe0_token(payload, signer().sshsig(exec_namespace, payload));
    expires_ = std::chrono::time_point_cast<std::chrono::seconds>(expires);
  }
  return token_;
}

std::string TokenMinter::vm_token(std::string_view vm, std::chrono::seconds lifetime, WallClock::time_point now) {
  const std::lock_guard lock(mutex_);
  const auto payload = exe0_payload(unix_seconds(now + lifetime), std::nullopt, std::nullopt);
  return exe0_token(payload, signer().sshsig(vm_namespace(vm), payload));
}

std::string TokenMinter::key_description() {
  const std::lock_guard lock(mutex_);
  return fmt::format("{} ({})", signer().fingerprint(), signer().description());
}

std::string TokenMinter::current() const {
  const std::lock_guard lock(mutex_);
  return token_;
}

}  // namespace exedev::detail
