// proxy/client/kafka_client_deadlines.cc: KafkaClient's one timer, at the
// earliest of its deadlines: a login round's, a written request's answer, a
// waiting request's SendOptions::deadline_ms. A request past its own is
// failed with kTimeout; a written one takes the connection with it, since
// its late answer would still arrive on it in order.
#include <vector>

#include "proxy/client/kafka_client.h"
#include "proxy/net/clock.h"

namespace epochgate::proxy {

void KafkaClient::arm_timer() {
  if (state_ == State::kClosed) return;
  uint64_t earliest = login_deadline_ms_;
  for (const Outgoing& o : written_)
    if (earliest == 0 || o.answer_by_ms < earliest) earliest = o.answer_by_ms;
  for (const Outgoing& o : waiting_)
    if (o.give_up_ms && (earliest == 0 || o.give_up_ms < earliest)) earliest = o.give_up_ms;
  if (earliest == 0) {
    uv_timer_stop(&timer_);
    return;
  }
  uint64_t now = now_ms();
  uv_timer_start(&timer_, &KafkaClient::on_timer, earliest > now ? earliest - now : 0, 0);
}

bool KafkaClient::expire_waiting(uint64_t now) {
  std::vector<Outgoing> late;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->give_up_ms && now >= it->give_up_ms) {
      late.push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  uint64_t gen = generation_;
  for (Outgoing& o : late) {
    BrokerAnswer a;
    a.error = ClientError::kTimeout;
    a.detail = state_ == State::kReady ? "request timed out" : "timed out waiting to connect";
    finish(o, std::move(a));
  }
  return gen == generation_ && state_ != State::kClosed;
}

void KafkaClient::on_timer(uv_timer_t* t) {
  auto* c = static_cast<KafkaClient*>(t->data);
  uint64_t now = now_ms();
  if (!c->expire_waiting(now)) return;
  if (c->login_deadline_ms_ && now >= c->login_deadline_ms_) {
    c->fail_all(ClientError::kTimeout, "request timed out");
    return;
  }
  for (const Outgoing& o : c->written_) {
    if (now >= o.answer_by_ms) {
      // A late answer would still arrive on this connection in order; the
      // connection is dropped instead so that a hung broker holds nothing.
      c->fail_all(ClientError::kDisconnected, "connection closed after a request timed out");
      return;
    }
  }
  c->arm_timer();
}

}  // namespace epochgate::proxy
