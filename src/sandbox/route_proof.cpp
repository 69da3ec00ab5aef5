#include "sandbox/route_proof.hpp"

#include <exedev/ssh/errors.hpp>

#include "common/inert_text.hpp"
#include "sandbox/route_mark.hpp"

namespace exedev::detail {

namespace {

// Both programs print one short line; anything past this is not a mark (the output is the VM's).
constexpr std::size_t kRouteOutputBytes = 4096;

// The mark made (or read) over /exec, which exe.dev routes by the token's account and the name.
Task<std::string> mark_over_exec(Client& client, const std::string& name, const std::shared_ptr<ssh::Connection>& connection) {
  ScriptOptions options;
  options.max_output_bytes = kRouteOutputBytes;
  options.idempotent = true;
  const auto made = co_await client.run_script(name, route_mark_script(name), options);
  auto mark = parse_route_mark(made.stdout_bytes, name);
  if (!mark) {
    throw SshMisrouteError("SSH to VM \"" + name + "\": the route to the VM cannot be proven: its route mark could not be "
                               "made over /exec (exit " + std::to_string(made.exit_code) + ": " +
                               inert_text(made.stderr_bytes, 200) + ")",
                           connection->user_key_fingerprint(), "unproven");
  }
  co_return std::move(*mark);
}

// The probe's output, whatever the far end is: a VM's shell, or a shell that runs nothing (the
// lobby's registration shell answers every exec with its text and exit status 1).
Task<std::string> probe(const std::shared_ptr<ssh::Connection>& connection) {
  ssh::ExecRequest request;
  request.command = std::string(route_mark_probe());
  request.max_output_bytes = kRouteOutputBytes;
  try {
    const auto result = co_await connection->exec(std::move(request));
    co_return result.stdout_bytes + result.stderr_bytes;
  } catch (const OutputLimitError& e) {
    co_return e.output().stdout_data + e.output().stderr_data;  // too long to be a mark: read what came
  }
}

std::string landing_of(ProbeReading::Answer answer) {
  switch (answer) {
    case ProbeReading::Answer::lobby_shell: return "the lobby's registration shell";
    case ProbeReading::Answer::other_vm: return "another VM";
    case ProbeReading::Answer::no_mark: return "a VM without the mark";
    case ProbeReading::Answer::mark: return "another VM";  // a mark of this name, not this VM's
    case ProbeReading::Answer::unrecognised: break;
  }
  return "an unrecognised answer";
}

}  // namespace

Task<void> prove_route(Client client, std::string name, std::shared_ptr<ssh::Connection> connection,
                       std::optional<std::string>& mark) {
  bool remade = false;
  if (!mark) {
    mark = co_await mark_over_exec(client, name, connection);
    remade = true;
  }
  for (;;) {
    const std::string output = co_await probe(connection);
    const auto reading = read_probe_output(output, name);
    if (reading.answer == ProbeReading::Answer::mark && reading.mark == *mark) co_return;
    // The agent may have removed the file (or a cp brought another): make it again, once.
    if (!remade && reading.answer != ProbeReading::Answer::lobby_shell) {
      mark = co_await mark_over_exec(client, name, connection);
      remade = true;
      continue;
    }
    const auto& key = connection->user_key_fingerprint();
    const std::string landing = landing_of(reading.answer);
    std::string why;
    if (reading.answer == ProbeReading::Answer::lobby_shell) {
      why = ": exe.dev's front lands a key it does not know there; register the key (`ssh exe.dev ssh-key add`) or "
            "name a registered one";
    } else if (reading.answer != ProbeReading::Answer::unrecognised) {
      why = ": exe.dev's front lets the key choose the VM, and this key belongs to another account or reaches another VM";
    }
    throw SshMisrouteError("SSH to VM \"" + name + "\" with key " + (key.empty() ? std::string("(unknown)") : key) +
                               " landed on " + landing + why + "; nothing was run there",
                           key, landing);
  }
}

}  // namespace exedev::detail
