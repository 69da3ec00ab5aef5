#pragma once
// Errors of the sandbox layer (the seed's errors table). All are workspace errors, which durable
// engines don't retry. Messages name VMs and tags, never tokens, environment values or response
// bodies. Other exe.dev client errors (a network failure before anything ran, a rate limit, a
// server error on a safe operation) propagate unchanged so that they can be retried.

#include <exedev/errors.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/types.hpp>

#include <optional>
#include <string>
#include <vector>

namespace exedev {

/// The VM doesn't exist: deleted (also while a command ran), or never created.
class VMNotFoundError : public workspace::WorkspaceUnavailableError {
 public:
  explicit VMNotFoundError(std::string vm_name);
  [[nodiscard]] const std::string& vm_name() const noexcept { return vm_name_; }

 private:
  std::string vm_name_;
};

/// The VM exists but lacks the scope tag, so this package refuses to touch it.
class VMOutOfScopeError : public workspace::WorkspaceUnavailableError {
 public:
  VMOutOfScopeError(std::string vm_name, std::string scope_tag);
  [[nodiscard]] const std::string& vm_name() const noexcept { return vm_name_; }
  [[nodiscard]] const std::string& scope_tag() const noexcept { return scope_tag_; }

 private:
  std::string vm_name_;
  std::string scope_tag_;
};

/// exe.dev refused the credentials: status 401 (token rejected), 403 (the token may not run the
/// command) or none (no token configured). "May not run" covers both of exe.dev's refusals: a
/// command missing from the token's `cmds` (HTTP 403) and a command a tag-scoped token may not
/// run, or a tag it may not use (HTTP 422 "command not allowed by SSH key permissions", "SSH key
/// scoped to tag ..."); both report 403 here. The client's APIError, with the HTTP status exe.dev
/// sent, is nested.
class ExeDevAccessError : public workspace::WorkspaceUnavailableError {
 public:
  /// `command` is the lobby command's name ("ssh", "new", ...), never its arguments. `context`,
  /// when given, starts the message (e.g. why the command was needed). `server_message`, when
  /// given, ends it, shown inert: what the client's error said of the refusal (exe.dev's text;
  /// for a minted token, the signing key's fingerprint and what to check).
  ExeDevAccessError(std::optional<unsigned> status, const std::string& command, const std::string& context = {},
                    const std::string& server_message = {});
  [[nodiscard]] std::optional<unsigned> status() const noexcept { return status_; }
  /// The command the token lacks (empty without a token).
  [[nodiscard]] const std::string& command() const noexcept { return command_; }

 private:
  std::optional<unsigned> status_;
  std::string command_;
};

/// A command's result can't be known and the VM still exists: the connection ended before the
/// exit status arrived, or the response to an accepted command couldn't be read. The command
/// may have finished; it is never run again. `output()` holds what arrived (UTF-8, undecodable
/// bytes replaced by U+FFFD), which is nothing for an unreadable response.
class CommandOutcomeUnknownError : public workspace::WorkspaceError, public WithPartialOutput {
 public:
  CommandOutcomeUnknownError(const std::string& vm_name, PartialOutput output);
  [[nodiscard]] const std::string& vm_name() const noexcept { return vm_name_; }

 private:
  std::string vm_name_;
};

/// A create or copy request failed after it may have reached exe.dev (a network error after
/// sending, an unreadable response, a 5xx including 504): the VM may or may not exist. Nothing
/// was retried. Recover with VMs::lookup(spec). The cause is available as a nested exception.
class ProvisionOutcomeUnknownError : public workspace::WorkspaceError {
 public:
  ProvisionOutcomeUnknownError(std::optional<std::string> vm_name, std::vector<std::string> tags);
  /// The spec's name, if it had one.
  [[nodiscard]] const std::optional<std::string>& vm_name() const noexcept { return vm_name_; }
  /// The tags the VM would carry (the spec's and the scope tag).
  [[nodiscard]] const std::vector<std::string>& tags() const noexcept { return tags_; }

 private:
  std::optional<std::string> vm_name_;
  std::vector<std::string> tags_;
};

/// The VM exists but getting it ready failed (waiting until it runs commands, a copy's tags
/// and comment, or making working_dir). The VM is kept, never deleted for you: retry with
/// VMs::initialize(ref(), spec), which is safe to repeat, or destroy it. The cause is available
/// as a nested exception.
class VMInitializationError : public workspace::WorkspaceError {
 public:
  VMInitializationError(workspace::WorkspaceRef ref, const std::string& step);
  [[nodiscard]] const workspace::WorkspaceRef& ref() const noexcept { return ref_; }

 private:
  workspace::WorkspaceRef ref_;
};

/// The operation needs a channel the backend's transport does not have: forwarding a port
/// needs SSH (direct-tcpip channels); exe.dev's /exec API carries lobby commands only. Nothing
/// was sent. Code errc::transport_unsupported.
class TransportUnsupportedError : public Error {
 public:
  /// `operation` names what was asked ("forwarding port 8000"), `transport` the one in use.
  TransportUnsupportedError(const std::string& operation, const std::string& transport, const std::string& reason);
  [[nodiscard]] const std::string& transport() const noexcept { return transport_; }

 private:
  std::string transport_;
};

}  // namespace exedev
