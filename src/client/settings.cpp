#include "client/settings.hpp"

#include <exedev/errors.hpp>

#include <cstdlib>
#include <stdexcept>

namespace exedev::detail {

namespace {

std::string_view trim(std::string_view s) {
  const auto ws = " \t\r\n\v\f";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

Endpoint parse_endpoint(std::string_view url) {
  Endpoint e;
  std::string_view rest;
  if (url.starts_with("https://")) {
    e.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    e.tls = false;
    rest = url.substr(7);
  } else {
    throw std::invalid_argument("exe.dev endpoint must start with https:// or http://");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    throw std::invalid_argument("exe.dev endpoint must not contain credentials; use ClientOptions::token");
  }
  if (path.find_first_of("?#") != std::string_view::npos || authority.find_first_of("?#") != std::string_view::npos) {
    throw std::invalid_argument("exe.dev endpoint must not contain a query or fragment");
  }
  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("exe.dev endpoint has an unterminated IPv6 address");
    e.host = std::string(authority.substr(1, close - 1));
    const auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw std::invalid_argument("exe.dev endpoint has a malformed host");
      port = after.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (e.host.empty()) throw std::invalid_argument("exe.dev endpoint has no host");
  if (e.host.find_first_of(" \t\r\n") != std::string::npos) throw std::invalid_argument("exe.dev endpoint host is malformed");
  if (!port.empty() || authority.ends_with(':')) {
    if (!all_digits(port) || port.size() > 5 || std::stoul(std::string(port)) == 0 || std::stoul(std::string(port)) > 65535) {
      throw std::invalid_argument("exe.dev endpoint has an invalid port");
    }
    e.port = std::string(port);
  } else {
    e.port = e.tls ? "443" : "80";
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  e.target = std::string(path) + "/exec";
  const bool default_port = (e.tls && e.port == "443") || (!e.tls && e.port == "80");
  const std::string host_text = e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host;
  e.text = std::string(e.tls ? "https://" : "http://") + host_text + (default_port ? "" : ":" + e.port) + std::string(path);
  return e;
}

std::optional<std::string> process_env(const char* name) {
  if (const char* v = std::getenv(name)) return std::string(v);
  return std::nullopt;
}

Settings resolve_settings(const ClientOptions& options, const EnvLookup& env) {
  Settings s;
  std::optional<std::string> token = options.token;
  if (!token || trim(*token).empty()) token = env("EXE_TOKEN");
  if (token) {
    const auto t = trim(*token);
    if (!t.empty()) {
      for (const char c : t) {
        if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
          throw AuthenticationError(0, "", "the API token contains whitespace or control characters");
        }
      }
      s.token = std::string(t);
    }
  }
  std::optional<std::string> endpoint = options.endpoint;
  if (!endpoint || trim(*endpoint).empty()) endpoint = env("EXE_BASE_URL");
  if (!endpoint || trim(*endpoint).empty()) endpoint = "https://exe.dev";
  s.endpoint = parse_endpoint(trim(*endpoint));
  std::optional<std::string> ca_file = options.ca_file;
  if (!ca_file || ca_file->empty()) ca_file = env("EXE_CA_FILE");
  if (ca_file && !ca_file->empty()) s.ca_file = std::move(ca_file);
  return s;
}

const std::string& require_token(const Settings& settings) {
  if (!settings.token) {
    throw AuthenticationError(
        0, "",
        "no API token: set ClientOptions::token or EXE_TOKEN (create one with "
        "`ssh exe.dev ssh-key generate-api-key --tag=<tag> --exp=30d`), or ClientOptions::minting to sign "
        "short-lived tokens with an SSH key registered with exe.dev");
  }
  return *settings.token;
}

}  // namespace exedev::detail
