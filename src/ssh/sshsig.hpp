#pragma once
// SSHSIG (OpenSSH PROTOCOL.sshsig), what `ssh-keygen -Y sign` writes: the data a key signs for a
// message in a namespace, and the signature blob that carries the public key and the key's
// signature. Only sha512 is made (exe.dev's tokens and ssh-keygen's default). Internal, sans-IO.

#include <string>
#include <string_view>

namespace exedev::ssh {

inline constexpr std::string_view sshsig_magic = "SSHSIG";
inline constexpr std::string_view sshsig_hash_algorithm = "sha512";

/// What the key signs: "SSHSIG" ‖ string(namespace) ‖ string("") (reserved) ‖ string("sha512")
/// ‖ string(SHA-512(message)).
[[nodiscard]] std::string sshsig_signed_data(std::string_view name_space, std::string_view message);

/// The SSHSIG blob: "SSHSIG" ‖ uint32(1) ‖ string(public key blob) ‖ string(namespace) ‖
/// string("") ‖ string("sha512") ‖ string(SSH signature blob).
[[nodiscard]] std::string sshsig_blob(std::string_view public_key_blob, std::string_view name_space,
                                      std::string_view signature_blob);

}  // namespace exedev::ssh
