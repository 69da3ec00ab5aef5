#include "ssh/ssh_config.hpp"

#include "ssh/patterns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace exedev::ssh {

namespace fs = std::filesystem;

namespace {

// OpenSSH's READCONF_MAX_DEPTH.
constexpr int kMaxIncludeDepth = 16;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\r' || c == '\n'; }

struct ConfigLine {
  std::string keyword;  // lowercased
  std::vector<std::string> args;
};

// Splits a line into its keyword and arguments; nullopt for a blank or comment line. Sets
// `problem` for a line that cannot be split.
std::optional<ConfigLine> split_line(std::string_view line, std::string& problem) {
  std::size_t at = 0;
  while (at < line.size() && is_space(line[at])) ++at;
  if (at == line.size() || line[at] == '#') return std::nullopt;
  const std::size_t keyword_end = std::min(line.size(), line.find_first_of(" \t\f\r\n=", at));
  ConfigLine out;
  out.keyword = lowercase(line.substr(at, keyword_end - at));
  at = keyword_end;
  while (at < line.size() && is_space(line[at])) ++at;
  if (at < line.size() && line[at] == '=') ++at;
  if (out.keyword.empty()) {
    problem = "a line without a keyword";
    return std::nullopt;
  }
  // Arguments: whitespace-separated words; "…" and '…' quote, a backslash escapes a quote, a
  // blank or a backslash; `#` where a word would start ends the line.
  while (true) {
    while (at < line.size() && is_space(line[at])) ++at;
    if (at == line.size() || line[at] == '#') break;
    std::string word;
    char quote = '\0';
    for (; at < line.size(); ++at) {
      const char c = line[at];
      if (c == '\\' && at + 1 < line.size() &&
          (line[at + 1] == '\\' || line[at + 1] == '"' || line[at + 1] == '\'' || (quote == '\0' && is_space(line[at + 1])))) {
        word += line[++at];
      } else if (quote != '\0') {
        if (c == quote) quote = '\0';
        else word += c;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (is_space(c)) {
        break;
      } else {
        word += c;
      }
    }
    if (quote != '\0') {
      problem = "an unterminated quote";
      return std::nullopt;
    }
    out.args.push_back(std::move(word));
  }
  if (out.args.empty()) {
    problem = fmt::format("no argument after the keyword {}", out.keyword);
    return std::nullopt;
  }
  return out;
}

std::optional<bool> parse_flag(const std::string& value) {
  const auto word = lowercase(value);
  if (word == "yes" || word == "true") return true;
  if (word == "no" || word == "false") return false;
  return std::nullopt;
}

// `~`, `~/…`, or a path with only the tokens expand_config_path() knows.
bool expandable(std::string_view text) {
  if (text.starts_with('~') && text.size() > 1 && text[1] != '/') return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') continue;
    if (i + 1 == text.size()) return false;
    if (std::string_view("dhurl%").find(text[++i]) == std::string_view::npos) return false;
  }
  return true;
}

class Resolver {
 public:
  Resolver(std::string_view host, const fs::path& home, const IncludeReader& read_include)
      : host_(lowercase(host)), home_(home), read_include_(read_include) {}

  void read(const ConfigText& file, int depth) {
    if (file.problem) {
      config_.notes.push_back(fmt::format("ssh_config {}: cannot be read ({}); skipped", file.name, *file.problem));
      return;
    }
    std::string_view text = file.text;
    std::size_t number = 0;
    while (!text.empty()) {
      ++number;
      const auto end = text.find('\n');
      const std::string_view line = text.substr(0, end);
      text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
      std::string problem;
      const auto parsed = split_line(line, problem);
      if (parsed) problem = apply(*parsed, depth);
      if (!problem.empty()) note(file.name, number, problem);
    }
  }

  SshConfig take() { return std::move(config_); }

 private:
  void note(const std::string& file, std::size_t line, const std::string& text) {
    config_.notes.push_back(fmt::format("ssh_config {} line {}: {}", file, line, text));
  }

  // Applies one line; returns why it was skipped, or empty.
  std::string apply(const ConfigLine& line, int depth) {
    const auto& keyword = line.keyword;
    const auto& args = line.args;
    if (keyword == "host") return host_block(args);
    if (keyword == "match") return match_block(args);
    if (!active_) return {};
    if (keyword == "include") return include(args, depth);
    const bool single = args.size() == 1;
    const auto one_argument = [&] { return fmt::format("{} takes one argument; line skipped", keyword); };
    if (keyword == "hostname") {
      if (!single) return one_argument();
      if (config_.host_name) return {};
      auto expanded = expand_host_name(args[0]);
      if (!expanded) return "HostName holds a % token other than %h and %%; line skipped";
      config_.host_name = std::move(*expanded);
    } else if (keyword == "user") {
      if (!single) return one_argument();
      if (!config_.user) config_.user = args[0];
    } else if (keyword == "port") {
      if (!single) return one_argument();
      unsigned value = 0;
      const auto* end = args[0].data() + args[0].size();
      const auto [at, error] = std::from_chars(args[0].data(), end, value);
      if (error != std::errc() || at != end || value == 0 || value > 65535) return "Port is not a number from 1 to 65535; line skipped";
      if (!config_.port) config_.port = static_cast<std::uint16_t>(value);
    } else if (keyword == "identityfile") {
      if (!single) return one_argument();
      if (!expandable(args[0])) return "IdentityFile holds ~user or a % token other than %d %h %u %r %l %%; line skipped";
      config_.identity_files.push_back(args[0]);
    } else if (keyword == "identitiesonly") {
      const auto flag = single ? parse_flag(args[0]) : std::nullopt;
      if (!flag) return "IdentitiesOnly is neither yes nor no; line skipped";
      if (!config_.identities_only) config_.identities_only = flag;
    } else if (keyword == "userknownhostsfile") {
      if (config_.user_known_hosts_file) return {};
      if (lowercase(args[0]) == "none") return "UserKnownHostsFile none is not followed: host keys are always checked; line skipped";
      if (!expandable(args[0])) return "UserKnownHostsFile holds ~user or a % token other than %d %h %u %r %l %%; line skipped";
      config_.user_known_hosts_file = args[0];
    } else if (keyword == "stricthostkeychecking") {
      if (!single) return one_argument();
      return strict_host_key_checking(lowercase(args[0]));
    }
    // Every other keyword is OpenSSH's business, not this library's.
    return {};
  }

  std::string strict_host_key_checking(const std::string& value) {
    std::optional<HostKeyPolicy> policy;
    std::string said;
    if (value == "yes" || value == "true" || value == "ask") {
      policy = HostKeyPolicy::strict;
    } else if (value == "accept-new") {
      policy = HostKeyPolicy::accept_new;
    } else if (value == "no" || value == "false" || value == "off") {
      policy = HostKeyPolicy::accept_new;
      said = "StrictHostKeyChecking no is taken as accept-new: this library never turns host key checking off";
    } else {
      return "StrictHostKeyChecking is not yes, ask, accept-new or no; line skipped";
    }
    if (config_.host_key_policy) return {};
    config_.host_key_policy = policy;
    return said;
  }

  std::string host_block(const std::vector<std::string>& patterns) {
    bool matched = false;
    for (const auto& argument : patterns) {
      const bool negated = argument.starts_with('!');
      const std::string pattern = lowercase(negated ? std::string_view(argument).substr(1) : std::string_view(argument));
      if (wildcard_match(host_, pattern)) {
        if (negated) {
          matched = false;
          break;
        }
        matched = true;
      }
    }
    active_ = matched;
    return {};
  }

  std::string match_block(const std::vector<std::string>& args) {
    // Until the line is understood whole, its block does not apply.
    active_ = false;
    bool matched = true;
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string criterion = lowercase(args[i]);
      const bool negated = criterion.starts_with('!');
      if (negated) criterion.erase(0, 1);
      bool result = false;
      if (criterion == "all") {
        result = true;
      } else if (criterion == "host" || criterion == "originalhost") {
        if (i + 1 == args.size()) return fmt::format("Match {} without a pattern list; its block is skipped", criterion);
        const std::string& subject = criterion == "host" && config_.host_name ? *config_.host_name : host_;
        result = match_pattern_list(subject, args[++i]);
      } else {
        return fmt::format("Match {} is not evaluated by this library; its block is skipped", criterion);
      }
      if (result == negated) matched = false;
    }
    active_ = matched;
    return {};
  }

  std::string include(const std::vector<std::string>& args, int depth) {
    if (depth >= kMaxIncludeDepth) return fmt::format("Include nested more than {} deep; line skipped", kMaxIncludeDepth);
    for (const auto& argument : args) {
      if (argument.starts_with('~') && argument.size() > 1 && argument[1] != '/') return "Include of ~user; line skipped";
      fs::path pattern;
      if (argument.starts_with('~')) pattern = home_.string() + argument.substr(1);
      else if (fs::path(argument).is_absolute()) pattern = argument;
      else pattern = home_ / ".ssh" / argument;
      for (const auto& file : read_include_(pattern.string())) read(file, depth + 1);
    }
    return {};
  }

  std::optional<std::string> expand_host_name(const std::string& text) const {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '%') {
        out += text[i];
        continue;
      }
      if (i + 1 == text.size()) return std::nullopt;
      const char token = text[++i];
      if (token == 'h') out += host_;
      else if (token == '%') out += '%';
      else return std::nullopt;
    }
    return out;
  }

  std::string host_;
  fs::path home_;
  const IncludeReader& read_include_;
  bool active_ = true;  // lines before the first Host or Match apply to every host
  SshConfig config_;
};

}  // namespace

SshConfig resolve_ssh_config(const ConfigText& file, std::string_view host, const fs::path& home,
                             const IncludeReader& read_include) {
  Resolver resolver(host, home, read_include);
  resolver.read(file, 0);
  return resolver.take();
}

fs::path expand_config_path(std::string_view text, const PathTokens& tokens) {
  std::string out;
  if (text.starts_with('~')) {
    out = tokens.home.string();
    text.remove_prefix(1);
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    switch (text[++i]) {
      case 'd': out += tokens.home.string(); break;
      case 'h': out += tokens.remote_host; break;
      case 'u': out += tokens.local_user; break;
      case 'r': out += tokens.remote_user; break;
      case 'l': out += tokens.local_host; break;
      default: out += text[i]; break;  // %%
    }
  }
  fs::path path(out);
  return path.is_absolute() ? path : tokens.home / ".ssh" / path;
}

}  // namespace exedev::ssh
