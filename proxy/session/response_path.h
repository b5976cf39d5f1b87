// proxy/session/response_path.h: a session's broker-to-client direction for one
// whole response frame at a time: matches it to the request it answers (the
// upstream's order), learns from it and rewrites broker addresses to
// epochgate's, caps ApiVersions (and decides KIP-951 bridging from it),
// lets the policy merge a split request's parts, and writes responses to the
// client in the client's request order (a large Fetch response may stream,
// proxy/session/response_stream.h). Never reads a socket, never lets an
// upstream address reach the client, never answers an acks=0 Produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/header.h"
#include "codec/messages/metadata_response.h"
#include "proxy/core/in_flight_queue.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/connection.h"
#include "proxy/session/response_stream.h"
#include "proxy/session/sasl_framing.h"
#include "proxy/session/session_host.h"

namespace epochgate::proxy {

/// The end of a rewritten response frame that is still the broker's own
/// bytes: the frame goes out as the bytes epochgate made, then these
/// (none: len 0).
struct BrokerTail {
  const uint8_t* data = nullptr;
  size_t len = 0;
};

/// Handles the broker's responses for one session (loop thread only).
class ResponsePath {
 public:
  /// `upstream_name` names the broker in log lines (kept up to date by the session).
  ResponsePath(WorkerContext& ctx, int32_t node_id, Connection& client, InFlightQueue& in_flight,
               SaslFraming& sasl, BrokerBridging& bridging, const std::string& upstream_name,
               SessionHost& host);

  /// One whole response: `frame` is the payload after the 4-byte size
  /// prefix, which must precede it in the same buffer (an unchanged
  /// response goes to the client from there). False when the session closed.
  bool handle(const uint8_t* frame, size_t size);
  /// Queues to the client every response at the head of the client order
  /// that is ready (answered locally, or answered while older ones waited).
  void flush_ready();
  /// A large Fetch response whose bytes are still arriving (`frame_size`
  /// with its prefix; proxy/session/response_stream.h): true when it now streams.
  bool try_stream(ByteBuffer& in, size_t frame_size) {
    return !sasl_.broker_sends_raw_token() && stream_.try_begin(in, frame_size);
  }
  bool streaming() const { return stream_.active(); }
  ResponseStream::Step relay_stream(ByteBuffer& in) { return stream_.relay(in); }
  /// ResponseStream::take_read_turn(): record bytes spliced socket to socket.
  ssize_t take_read_turn(Connection& upstream) { return stream_.take_read_turn(upstream); }
  /// ResponseStream::take_splice_error() and complete().
  int take_splice_error() { return stream_.take_splice_error(); }
  bool stream_complete() const { return stream_.complete(); }
  /// ResponseStream::next_read_bytes().
  size_t stream_read_bytes(const Connection& upstream) const { return stream_.next_read_bytes(upstream); }
  /// ResponseStream::first_read_bytes().
  size_t first_read_bytes(const Connection& upstream) const {
    return stream_.first_read_bytes(upstream);
  }
  /// Bytes of the streamed frame not yet read (0 when none streams).
  size_t stream_left() const { return stream_.left(); }
  /// The request whose response streams, or nullptr (ResponseStream::request()).
  InFlightRequest* streamed_request() const { return stream_.request(); }
  /// Bytes of the streamed frame with its size prefix (0 when none streams).
  size_t stream_frame_bytes() const { return stream_.frame_bytes(); }

 private:
  /// Delivers the broker's raw answer to a SASL token; false to close.
  bool deliver_raw_sasl_token(const uint8_t* frame, size_t size);
  /// What the pipeline made of a response's bytes.
  enum class Made : uint8_t {
    kUnchanged,  ///< the broker's bytes go to the client as they came
    kChanged,    ///< `out` (then `tail`) replace them
    /// A Produce with reroutes: kept decoded in its RerouteState (its bytes
    /// in the entry's `response`) until the leaders' answers merge into it.
    kKept,
  };
  /// Parses the header and runs the response through the one pipeline
  /// (proxy/session/response_pipeline.cc), ApiVersions through its cap.
  /// Returns false when the session closed; sets `made` (and `out`, `tail`).
  bool transform_response(InFlightRequest& e, const uint8_t* frame, size_t size,
                          std::vector<uint8_t>& out, BrokerTail& tail, Made& made);
  /// ApiVersions: caps what the broker offers to what epochgate decodes and
  /// decides the KIP-951 bridge from the broker's Produce and Fetch range.
  bool cap_api_versions_response(InFlightRequest& e, const codec::ResponseHeader& h,
                                 const uint8_t* body, size_t body_len, std::vector<uint8_t>& out,
                                 Made& made);
  /// The pipeline of a response of type M (addressed, learned or decided):
  /// decode, learn, rewrite addresses, merge and backfill (the policy's
  /// amend_response), then keep it decoded for its reroutes (a Produce
  /// with reroutes, RerouteState::response) or encode it if something
  /// changed. False when the session closed (a malformed response, an
  /// unmapped node).
  template <typename M>
  bool run_pipeline(InFlightRequest& e, codec::ResponseHeader& h, const uint8_t* body,
                    size_t body_len, std::vector<uint8_t>& out, BrokerTail& tail, Made& made);
  /// A MetadataResponse whose only change is its broker addresses, at the
  /// version the broker answered: `out` gets the frame up to the end of a
  /// re-encoded Brokers array and `tail` the broker's bytes after it (every
  /// topic and partition), so a 100,000-partition answer is not re-encoded.
  /// False (nothing written) when the Brokers array cannot be delimited.
  bool splice_metadata_brokers(const codec::MetadataResponse& m, int16_t version,
                               const codec::ResponseHeader& h, const uint8_t* body,
                               size_t body_len, std::vector<uint8_t>& out, BrokerTail& tail);
  /// The response of `e` (all parts answered): written now when `e` is the
  /// oldest request owed, else kept until the older ones are written. The
  /// frame is `frame_with_prefix`, then `tail` when it has one.
  void deliver(InFlightRequest& e, const uint8_t* frame_with_prefix, size_t len,
               BrokerTail tail = {});
  /// The broker's part of a request with reroutes, kept in `e.response`
  /// and decoded in its RerouteState: moment 2 of rerouting
  /// (Rerouter::after_broker_answer), then the response once every part is in.
  void deliver_rerouted(InFlightRequest& e);

  WorkerContext& ctx_;
  int32_t node_id_;
  Connection& client_;
  InFlightQueue& in_flight_;
  SaslFraming& sasl_;
  BrokerBridging& bridging_;
  const std::string& upstream_name_;
  SessionHost& host_;
  // Broker limits seen in this connection's ApiVersions, for KIP-951 bridging.
  int16_t broker_max_produce_ = -1;
  int16_t broker_max_fetch_ = -1;
  ResponseStream stream_;
};

}  // namespace epochgate::proxy
