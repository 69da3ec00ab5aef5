#pragma once
// A private CA and a server certificate, made in memory at start (OpenSSL 3 EVP, EC P-256).

#include <string>

namespace exedev::emulator {

struct TlsMaterial {
  std::string ca_certificate_pem;      ///< what clients trust (written to ca_file())
  std::string server_certificate_pem;  ///< for 127.0.0.1, ::1, localhost and *.exe.xyz (the VM proxy), signed by the CA
  std::string server_key_pem;
};

/// Throws std::runtime_error with OpenSSL's reason on failure.
/// `expired_server_certificate`: the server certificate's validity ended a day ago (for tests
/// of the client's refusal).
TlsMaterial make_tls_material(bool expired_server_certificate = false);

}  // namespace exedev::emulator
