#pragma once
// Proving that an SSH connection landed on the VM it names, before any of the caller's work runs
// on it (the programs and their readers: route_mark.hpp). exe.dev's front accepts every key and
// lets the key decide where the connection lands; this is the check that only the named VM can
// pass.

#include <memory>
#include <optional>
#include <string>

#include <exedev/client.hpp>

#include "ssh/connection.hpp"

namespace exedev::detail {

/// Runs the route probe on `connection` and compares it with VM `name`'s mark, made or read over
/// /exec first when `mark` holds none (one request per attach; `mark` keeps it for the next
/// connection). A VM that has lost its mark (the probe finds none) gets it again over /exec once.
/// Throws SshMisrouteError naming the key and what the probe found (the lobby's registration
/// shell, another VM, a VM without the mark) or, when the mark cannot be made, that the route is
/// unproven; ConnectionError when the connection drops; the client's errors from /exec.
/// Cancellation: as Client::run_script and Connection::exec.
Task<void> prove_route(Client client, std::string name, std::shared_ptr<ssh::Connection> connection,
                       std::optional<std::string>& mark);

}  // namespace exedev::detail
