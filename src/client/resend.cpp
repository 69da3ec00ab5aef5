#include "client/resend.hpp"

namespace exedev::detail {

ResendRule::Decision ResendRule::on_failure(const FailedExchange& failure) {
  using K = FailedExchange::Kind;
  // Nothing written, and not for want of time: the request never left this process.
  const bool unsent = failure.kind == K::write_failed && failure.written == 0 && !failure.timed_out;
  const bool resendable =
      failure.reused && (unsent || (failure.kind == K::closed_silently && failure.idempotent));
  if (!unsent) may_have_reached_ = true;
  if (resendable && resends_ < max_resends) {
    ++resends_;
    return Decision::resend;
  }
  return may_have_reached_ ? Decision::sent : Decision::not_sent;
}

}  // namespace exedev::detail
