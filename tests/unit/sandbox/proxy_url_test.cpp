// proxy_url_for_port: where exe.dev's HTTPS proxy serves a VM's port (docs/content/proxy.md).
#include <catch2/catch.hpp>

#include <exedev/sandbox/vms.hpp>

#include <stdexcept>

using exedev::proxy_url_for_port;

TEST_CASE("the proxy port is the bare URL; 3000-9999 have their own; nothing else is served") {
  CHECK(proxy_url_for_port("https://web.exe.xyz", 80, 80) == "https://web.exe.xyz/");
  CHECK(proxy_url_for_port("https://web.exe.xyz", 8080, 8080) == "https://web.exe.xyz/");
  CHECK(proxy_url_for_port("https://web.exe.xyz", 80, 3000) == "https://web.exe.xyz:3000/");
  CHECK(proxy_url_for_port("https://web.exe.xyz", 80, 9999) == "https://web.exe.xyz:9999/");
  CHECK_THROWS_AS(proxy_url_for_port("https://web.exe.xyz", 80, 2999), std::invalid_argument);
  CHECK_THROWS_AS(proxy_url_for_port("https://web.exe.xyz", 80, 10000), std::invalid_argument);
  CHECK_THROWS_AS(proxy_url_for_port("https://web.exe.xyz", 8080, 80), std::invalid_argument);
}

TEST_CASE("a proxy URL must be https://<host>") {
  CHECK_THROWS_AS(proxy_url_for_port("", 80, 80), std::invalid_argument);
  CHECK_THROWS_AS(proxy_url_for_port("http://web.exe.xyz", 80, 80), std::invalid_argument);
  CHECK_THROWS_AS(proxy_url_for_port("https://web.exe.xyz/", 80, 80), std::invalid_argument);
  CHECK_THROWS_AS(proxy_url_for_port("https://web.exe.xyz:443", 80, 80), std::invalid_argument);
  CHECK_THROWS_AS(proxy_url_for_port("https://", 80, 80), std::invalid_argument);
}
