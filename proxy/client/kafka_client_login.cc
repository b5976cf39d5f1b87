// proxy/client/kafka_client_login.cc: KafkaClient's SASL login on its own
// connection (proxy/client/sasl_login.h drives the exchange): each round
// bounded by login_timeout_ms, the SCRAM key derivation off the loop, and
// the renewal before the session the broker granted ends (KIP-368). Never
// lets a login answer interleave with a request's: pump() starts a renewal
// only when nothing is written.
#include <algorithm>

#include "proxy/client/kafka_client.h"
#include "proxy/net/clock.h"

namespace epochgate::proxy {

void KafkaClient::start_login() {
  state_ = State::kLoggingIn;
  login_ = std::make_unique<SaslLogin>(options_.sasl);
  apply_login_step(login_->start(next_correlation()));
}

void KafkaClient::apply_login_step(SaslLoginStep step) {
  uint64_t gen = generation_;
  switch (step.kind) {
    case SaslLoginStep::Kind::kSend:
      login_deadline_ms_ = now_ms() + options_.login_timeout_ms;
      arm_timer();
      conn_->queue(step.frame.data(), step.frame.size());
      conn_->flush();
      return;
    case SaslLoginStep::Kind::kDerive: {
      // PBKDF2 on the thread pool, bounded by the login deadline; the
      // loop serves everything else meanwhile.
      login_deadline_ms_ = now_ms() + options_.login_timeout_ms;
      arm_timer();
      std::string error;
      login_derivation_ = ScramDerivation::start(
          loop_, std::move(step.salted),
          [this, gen](std::unique_ptr<ScramSaltedPassword> ready) {
            login_derivation_.reset();
            if (gen != generation_ || !login_) return;
            apply_login_step(login_->on_derived(std::move(ready), next_correlation()));
          },
          error);
      if (login_derivation_) return;
      SaslLoginStep failed;
      failed.kind = SaslLoginStep::Kind::kFailed;
      failed.error = error;
      apply_login_step(std::move(failed));
      return;
    }
    case SaslLoginStep::Kind::kDone: {
      bool again = logged_in_;
      logged_in_ = true;
      login_.reset();
      login_deadline_ms_ = 0;
      uint64_t now = now_ms();
      // KIP-368: log in again at 85% of the granted lifetime, before it ends.
      auto lifetime = static_cast<uint64_t>(std::max<int64_t>(0, step.session_lifetime_ms));
      relogin_at_ms_ = lifetime > 0 ? now + lifetime * 85 / 100 : 0;
      session_ends_ms_ = lifetime > 0 ? now + lifetime : 0;
      state_ = State::kReady;
      if (observer_) observer_->on_login(step, again, true);
      if (gen == generation_ && state_ == State::kReady) pump();
      return;
    }
    case SaslLoginStep::Kind::kFailed: {
      bool again = logged_in_;
      login_.reset();
      login_deadline_ms_ = 0;
      if (observer_) observer_->on_login(step, again, true);
      if (gen == generation_) fail_all(ClientError::kLoginFailed, "SASL login failed");
      return;
    }
  }
}

}  // namespace epochgate::proxy
