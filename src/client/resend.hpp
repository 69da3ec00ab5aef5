#pragma once
// The transport's resend rule, sans-IO: whether a request whose exchange failed on a
// connection is sent again on a fresh one, and otherwise whether the failure may say the
// request never reached exe.dev (ConnectionError::sent). Tested in
// tests/unit/client/resend_test.cpp.
//
// A request is sent again only when it provably did not reach the server (nothing of it was
// written to a reused connection), or when it is idempotent and a reused keep-alive connection
// was closed before one byte of an answer (the server may have closed it as the request went
// out). A fresh connection that fails is never a reason to resend: the server is not simply
// retiring an idle connection.

#include <cstddef>

namespace exedev::detail {

struct FailedExchange {
  enum class Kind {
    write_failed,     ///< writing the request failed (`written` bytes of it left this process)
    closed_silently,  ///< the connection ended before one byte of an answer
  };
  Kind kind = Kind::write_failed;
  bool reused = false;      ///< the connection had served requests before
  std::size_t written = 0;  ///< write_failed: bytes of the request written
  bool timed_out = false;   ///< write_failed: the request's deadline ended the write
  bool idempotent = false;  ///< the request may run twice
};

/// Tracks one request's attempts.
class ResendRule {
 public:
  enum class Decision {
    resend,    ///< send it again on a fresh connection
    not_sent,  ///< fail: no attempt can have reached the server
    sent,      ///< fail: an attempt may have reached the server
  };

  /// Resends of one request at most (a server that keeps closing connections).
  static constexpr int max_resends = 3;

  [[nodiscard]] Decision on_failure(const FailedExchange& failure);

 private:
  int resends_ = 0;
  bool may_have_reached_ = false;  ///< an earlier attempt may have reached the server
};

}  // namespace exedev::detail
