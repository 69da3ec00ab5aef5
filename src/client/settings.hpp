#pragma once
// Resolving ClientOptions against the environment and parsing the endpoint URL, sans-IO.

#include <exedev/client.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

struct Endpoint {
  bool tls = true;
  std::string host;    ///< Without brackets for IPv6 literals.
  std::string port;    ///< Always set ("443" / "80" by default).
  std::string target;  ///< The request target, e.g. "/exec".
  std::string text;    ///< Normalised URL, e.g. "https://exe.dev".
};

/// Parses `http[s]://host[:port][/prefix]`. Throws std::invalid_argument for anything else
/// (user info, query, fragment, another scheme). The message never repeats the URL.
[[nodiscard]] Endpoint parse_endpoint(std::string_view url);

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

/// Reads the process environment.
[[nodiscard]] std::optional<std::string> process_env(const char* name);

struct Settings {
  std::optional<std::string> token;  ///< Trimmed; nullopt when none was configured.
  Endpoint endpoint;
  std::optional<std::string> ca_file;  ///< Extra trusted CAs; nullopt for none.
};

/// options.token, else EXE_TOKEN; options.endpoint, else EXE_BASE_URL, else https://exe.dev;
/// options.ca_file, else EXE_CA_FILE, else none. An empty value counts as unset.
[[nodiscard]] Settings resolve_settings(const ClientOptions& options, const EnvLookup& env);

/// The token, or AuthenticationError (status 0) saying how to create one.
[[nodiscard]] const std::string& require_token(const Settings& settings);

}  // namespace exedev::detail
