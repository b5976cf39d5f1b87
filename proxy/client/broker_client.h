// proxy/client/broker_client.h: the seam between code that needs "send this
// request to broker N and hand me its answer, or why there is none" (the
// rerouter, the acks=0 poster) and what carries it: KafkaClient over a libuv
// connection in epochgate (proxy/client/kafka_client.h), an in-memory fake in
// unit tests (tests/proxy/lib/fake_broker_client.h). Declares the request
// and answer shapes, their errors, and the typed send()/post() every
// implementation shares. No I/O here; never retries, never picks a broker.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/api_traits.h"
#include "config/config.h"

namespace epochgate::proxy {

/// Why a request got no typed response (or was refused by send()).
enum class ClientError {
  kNone,                ///< answered; the response carries the broker's own error codes
  kBusy,                ///< send() only: max_outstanding requests already wait
  kClosed,              ///< the client is closed (or closing)
  kConnectFailed,       ///< every target failed to resolve, connect or answer ApiVersions
  kLoginFailed,         ///< the SASL login was refused or is impossible on this broker
  kUnsupportedVersion,  ///< no version in broker, codec and caller ranges together
  kTimeout,             ///< not answered within its timeout (or a login round timed out)
  kDisconnected,        ///< the connection closed or failed before the answer
  kBadResponse,         ///< an answer that is not a valid response to this request
};
/// Stable lower-case name of `e` ("timeout", ...), for logs and metric labels.
const char* client_error_name(ClientError e);
/// ClientResult::detail of a kDisconnected whose broker closed the
/// connection cleanly (EOF) before answering.
inline constexpr const char* kBrokerClosedDetail = "broker closed the connection";

/// How a request may be sent.
struct SendOptions {
  /// Milliseconds from the moment the request is written until its answer.
  /// Waiting for the connection is bounded separately (connect_timeout_ms
  /// per target, login_timeout_ms per login round).
  uint32_t timeout_ms = 5000;
  /// Non-zero: milliseconds from send()/post() until the request is
  /// answered (or, for a post, written), waiting for the dial and the
  /// login included; past it the request fails with kTimeout. A request
  /// still waiting for the connection then leaves without dropping it; a
  /// written one is bounded by the smaller of the two limits.
  uint32_t deadline_ms = 0;
  /// Caller's version bounds, intersected with the codec's and the broker's.
  int16_t min_version = 0;
  int16_t max_version = 0x7fff;
  /// Request header client id for this request (brokers account quotas by
  /// user and client id: a request made for a client carries its id);
  /// empty: the client's own (KafkaClientOptions::client_id).
  std::string client_id;
};

/// A typed answer: `response` is valid when ok(). Byte views inside it
/// (codec::Bytes) point into the connection's input and are valid only
/// during the callback.
template <class Resp>
struct ClientResult {
  ClientError error = ClientError::kNone;
  std::string detail;    ///< why, for a log line ("request timed out", ...)
  int16_t version = -1;  ///< version the request went at (-1: not written)
  int32_t correlation_id = 0;
  Resp response;
  bool ok() const { return error == ClientError::kNone; }
};

/// An answer before decoding: the response body (after its header) at
/// `version`, valid only during the callback; or `error` and `detail`.
struct BrokerAnswer {
  ClientError error = ClientError::kNone;
  std::string detail;
  int16_t version = -1;
  int32_t correlation_id = 0;
  const uint8_t* body = nullptr;
  size_t size = 0;
};

/// One request, type-erased: what send() and post() hand an implementation.
struct BrokerRequest {
  int16_t api_key = 0;
  int16_t lo = 0;  ///< lowest version the caller and the codec accept
  int16_t hi = 0;  ///< highest
  uint32_t timeout_ms = 0;   ///< SendOptions::timeout_ms
  uint32_t deadline_ms = 0;  ///< SendOptions::deadline_ms (0: none)
  std::string client_id;     ///< empty: the client's own
  /// Appends the size-prefixed frame (header `h`) at version `v`.
  std::function<void(std::vector<uint8_t>&, const codec::RequestHeader& h, int16_t v)> encode;
  /// The answer or the failure, exactly once; empty: no answer expected (post).
  std::function<void(BrokerAnswer&&)> done;
  /// post() only: see BrokerClient::post().
  std::function<void(ClientError)> written;
};

/// One broker connection's requests. All calls on the loop thread.
class BrokerClient {
 public:
  template <class Req>
  using ResponseOf = typename codec::Api<Req::kApiKey>::Response;
  template <class Req>
  using Callback = std::function<void(ClientResult<ResponseOf<Req>>&&)>;

  virtual ~BrokerClient() = default;

  /// Sends `req` (connecting first when not connected). Returns kNone when
  /// accepted: `done` then runs exactly once, never from inside send().
  /// Any other value refuses it now (kClosed, kBusy, or kUnsupportedVersion
  /// when the broker's versions are known already) and `done` never runs.
  /// Byte views in `req` must stay valid until `done`; `keep_alive` is held
  /// until the request is encoded or dropped.
  template <class Req>
  ClientError send(Req req, const SendOptions& options, Callback<Req> done,
                   std::shared_ptr<const void> keep_alive = nullptr) {
    BrokerRequest out = request_of(std::move(req), options, std::move(keep_alive));
    out.done = [done = std::move(done)](BrokerAnswer&& raw) {
      ClientResult<ResponseOf<Req>> r;
      r.error = raw.error;
      r.detail = std::move(raw.detail);
      r.version = raw.version;
      r.correlation_id = raw.correlation_id;
      if (r.ok()) {
        codec::Bytes trailing;
        codec::Status st = codec::decode_body_allow_trailing(raw.body, raw.size, raw.version,
                                                             r.response, trailing);
        if (!st.ok()) {
          r.error = ClientError::kBadResponse;
          r.detail = std::string(codec::api_info(Req::kApiKey)->name) + ": " + st.message();
        }
      }
      done(std::move(r));
    };
    return submit(std::move(out));
  }

  /// Sends `req` expecting no answer (Produce with acks=0): written once
  /// the connection is up, forgotten after. Same refusals as send().
  /// `written`, when set, runs once (never inside post()): kNone when the
  /// transport has taken every byte of the request, else why it was never
  /// written.
  template <class Req>
  ClientError post(Req req, const SendOptions& options,
                   std::shared_ptr<const void> keep_alive = nullptr,
                   std::function<void(ClientError)> written = nullptr) {
    BrokerRequest out = request_of(std::move(req), options, std::move(keep_alive));
    out.written = std::move(written);
    return submit(std::move(out));
  }

  /// Takes `req` (send() and post() above): kNone, or why it is refused now.
  virtual ClientError submit(BrokerRequest req) = 0;
  /// Drops the connection: every accepted request fails with kDisconnected
  /// and `why`; the next one connects again.
  virtual void disconnect(const std::string& why) = 0;
  /// Fails everything with kClosed; `done` runs once nothing of the client
  /// is left on the loop. Idempotent.
  virtual void close(std::function<void()> done) = 0;

 private:
  template <class Req>
  static BrokerRequest request_of(Req req, const SendOptions& options,
                                  std::shared_ptr<const void> keep_alive) {
    auto held = std::make_shared<Req>(std::move(req));
    BrokerRequest out;
    out.api_key = Req::kApiKey;
    out.lo = std::max<int16_t>(Req::kMinVersion, options.min_version);
    out.hi = std::min<int16_t>(Req::kMaxVersion, options.max_version);
    out.timeout_ms = options.timeout_ms;
    out.deadline_ms = options.deadline_ms;
    out.client_id = options.client_id;
    out.encode = [held, keep_alive](std::vector<uint8_t>& frame, const codec::RequestHeader& h,
                                    int16_t v) { codec::encode_frame(frame, h, *held, v); };
    return out;
  }
};

/// One BrokerClient per broker node id (KafkaClientPool in epochgate).
class BrokerClients {
 public:
  virtual ~BrokerClients() = default;
  /// The client of `node_id` at `address`, created on first use; a node
  /// known at another address gets a new one. nullptr when none can exist
  /// (closed, or the bound on nodes is reached).
  virtual BrokerClient* client(int32_t node_id, const config::HostPort& address) = 0;
  /// Closes the client of a node the cluster no longer lists.
  virtual void forget(int32_t node_id) = 0;
  /// Closes every client; `done` runs once all are gone. Idempotent.
  virtual void close(std::function<void()> done) = 0;
};

}  // namespace epochgate::proxy
