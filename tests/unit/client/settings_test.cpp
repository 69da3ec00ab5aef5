#include "client/settings.hpp"

#include <exedev/errors.hpp>

#include <catch2/catch.hpp>

#include <map>

using namespace exedev;
using namespace exedev::detail;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    if (auto it = vars.find(name); it != vars.end()) return it->second;
    return std::nullopt;
  };
}

}  // namespace

TEST_CASE("endpoint parsing") {
  auto e = parse_endpoint("https://exe.dev");
  CHECK(e.tls);
  CHECK(e.host == "exe.dev");
  CHECK(e.port == "443");
  CHECK(e.target == "/exec");
  CHECK(e.text == "https://exe.dev");
  e = parse_endpoint("http://127.0.0.1:8080/");
  CHECK_FALSE(e.tls);
  CHECK(e.port == "8080");
  CHECK(e.target == "/exec");
  CHECK(e.text == "http://127.0.0.1:8080");
  e = parse_endpoint("https://[::1]:9443/api/");
  CHECK(e.host == "::1");
  CHECK(e.target == "/api/exec");
  CHECK(e.text == "https://[::1]:9443/api");
  CHECK_THROWS_AS(parse_endpoint("ftp://x"), std::invalid_argument);
  CHECK_THROWS_AS(parse_endpoint("https://user:pw@x"), std::invalid_argument);
  CHECK_THROWS_AS(parse_endpoint("https://x/?q=1"), std::invalid_argument);
  CHECK_THROWS_AS(parse_endpoint("https://x:0"), std::invalid_argument);
  CHECK_THROWS_AS(parse_endpoint("https://x:99999"), std::invalid_argument);
  CHECK_THROWS_AS(parse_endpoint("https://:443"), std::invalid_argument);
  try {
    (void)parse_endpoint("https://user:hunter2@x");
  } catch (const std::invalid_argument& err) {
    CHECK(std::string(err.what()).find("hunter2") == std::string::npos);
  }
}

TEST_CASE("options win over the environment, which wins over defaults") {
  ClientOptions o;
  auto s = resolve_settings(o, env_of({}));
  CHECK_FALSE(s.token);
  CHECK(s.endpoint.text == "https://exe.dev");
  s = resolve_settings(o, env_of({{"EXE_TOKEN", " exe1.ABC \n"}, {"EXE_BASE_URL", "http://127.0.0.1:1234"}}));
  CHECK(s.token == "exe1.ABC");
  CHECK(s.endpoint.text == "http://127.0.0.1:1234");
  o.token = "exe1.OPT";
  o.endpoint = "https://example.test";
  s = resolve_settings(o, env_of({{"EXE_TOKEN", "exe1.ENV"}, {"EXE_BASE_URL", "http://127.0.0.1:1234"}}));
  CHECK(s.token == "exe1.OPT");
  CHECK(s.endpoint.text == "https://example.test");
}

TEST_CASE("the CA file comes from the options, else from EXE_CA_FILE, else none") {
  ClientOptions o;
  CHECK_FALSE(resolve_settings(o, env_of({})).ca_file);
  CHECK_FALSE(resolve_settings(o, env_of({{"EXE_CA_FILE", ""}})).ca_file);
  CHECK(resolve_settings(o, env_of({{"EXE_CA_FILE", "/env/ca.pem"}})).ca_file == "/env/ca.pem");
  o.ca_file = "/options/ca.pem";
  CHECK(resolve_settings(o, env_of({{"EXE_CA_FILE", "/env/ca.pem"}})).ca_file == "/options/ca.pem");
}

TEST_CASE("a missing token says how to make one; a bad one is not echoed") {
  const auto s = resolve_settings({}, env_of({}));
  try {
    (void)require_token(s);
    FAIL("no exception");
  } catch (const AuthenticationError& e) {
    CHECK(e.status() == 0);
    CHECK(std::string(e.what()).find("ssh exe.dev ssh-key generate-api-key --tag=") != std::string::npos);
  }
  ClientOptions o;
  o.token = "exe1.AB\nCD";
  try {
    (void)resolve_settings(o, env_of({}));
    FAIL("no exception");
  } catch (const AuthenticationError& e) {
    CHECK(std::string(e.what()).find("exe1.AB") == std::string::npos);
  }
}
