// proxy/session/session_login.cc: the Session's SASL bookkeeping: epochgate's own
// login on the upstream connection in sidecar mode
// (upstream_sasl.on_behalf_of_clients; proxy/client/sasl_login.h runs the exchange,
// this applies its steps to the connection and the metrics), and the count
// of clients' own passed-through logins. Never sees a client's credentials.
#include <spdlog/spdlog.h>

#include "metrics/proxy_metrics.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"
#include "proxy/session/session.h"

namespace epochgate::proxy {

namespace {
}  // namespace

void Session::start_own_login() {
  own_login_ = std::make_unique<SaslLogin>(ctx_.config->upstream_sasl);
  apply_own_login_step(own_login_->start(own_correlation_++));
}

bool Session::apply_own_login_step(SaslLoginStep step) {
  const std::string& mechanism = ctx_.config->upstream_sasl.mechanism;
  switch (step.kind) {
    case SaslLoginStep::Kind::kSend:
      upstream_->queue(step.frame.data(), step.frame.size());
      upstream_->flush();
      return true;
    case SaslLoginStep::Kind::kDerive: {
      // PBKDF2 on the thread pool: the loop keeps serving other sessions;
      // client frames stay held (own_login_ is set) until the login ends.
      std::string error;
      own_derivation_ = ScramDerivation::start(
          ctx_.loop, std::move(step.salted),
          [this](std::unique_ptr<ScramSaltedPassword> ready) {
            own_derivation_.reset();
            if (state_ != State::kOpen || !own_login_) return;
            apply_own_login_step(own_login_->on_derived(std::move(ready), own_correlation_++));
          },
          error);
      if (own_derivation_) return true;
      SaslLoginStep failed;
      failed.kind = SaslLoginStep::Kind::kFailed;
      failed.error = error;
      return apply_own_login_step(std::move(failed));
    }
    case SaslLoginStep::Kind::kDone:
      own_login_.reset();
      if (ctx_.metrics) ctx_.metrics->sasl_authentication("on_behalf", mechanism, true, own_logged_in_);
      own_logged_in_ = true;
      own_relogin_at_ns_ =
          step.session_lifetime_ms > 0
              ? now_ns() + static_cast<uint64_t>(step.session_lifetime_ms) * 850000  // 85 %
              : 0;
      return true;
    case SaslLoginStep::Kind::kFailed:
      own_login_.reset();
      if (ctx_.metrics) ctx_.metrics->sasl_authentication("on_behalf", mechanism, false, own_logged_in_);
      EPOCHGATE_PROXY_LOG(warn, "sasl_login",
                          "SASL login ({}) to {} for client {} failed: {}; closing the client",
                          mechanism, upstream_name_, client_.peer(), step.error);
      close(CloseReason::kSaslLoginFailed);
      return false;
  }
  return false;
}

void Session::count_client_login(SaslLoginOutcome outcome) {
  if (outcome == SaslLoginOutcome::kNone || !ctx_.metrics) return;
  ctx_.metrics->sasl_authentication("passthrough", sasl_.mechanism_label(),
                                    outcome == SaslLoginOutcome::kOk, false);
}

}  // namespace epochgate::proxy
