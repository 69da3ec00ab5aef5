// Every parser of /exec answers on any body: a result or an exedev::Error, never another
// exception or a crash; and an error message never repeats the body's secret.
#include "fuzz.hpp"

#include "client/api_response.hpp"

#include <exedev/errors.hpp>

#include <string>
#include <vector>

using exedev::fuzz::require;

namespace {

// The secret the corpus plants in bodies; a message that repeats it leaks a token.
const std::string secret = "exedev-fuzz-secret-token";

template <typename F>
void parse(F f) {
  try {
    f();
  } catch (const exedev::Error& e) {
    require(std::string(e.what()).find(secret) == std::string::npos, "an error message never repeats the secret");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(exedev::fuzz::bytes(data, size));
  const std::vector<std::string> secrets = {secret};
  using namespace exedev::detail;
  parse([&] { (void)parse_vm_answer(body, "new"); });
  parse([&] { (void)parse_vm_answer(body, "cp"); });
  parse([&] { (void)parse_list_answer(body); });
  parse([&] { (void)parse_remove_answer(body); });
  parse([&] { (void)parse_tags_answer(body); });
  parse([&] { (void)parse_whoami_answer(body); });
  parse([&] { parse_object_answer(body, "pause"); });
  for (const unsigned status : {200u, 400u, 401u, 404u, 422u, 429u, 500u, 504u}) {
    parse([&] { check_lobby_answer(status, "ls", body, secrets); });
  }
  require(server_message(body, secrets).find(secret) == std::string::npos, "server_message masks the secret");
  return 0;
}
