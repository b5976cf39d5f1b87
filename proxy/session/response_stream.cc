// proxy/session/response_stream.cc
#include "proxy/session/response_stream.h"

#include <uv.h>

#include <algorithm>
#include <utility>

#include "codec/fetch_tail.h"
#include "codec/header.h"
#include "codec/status.h"
#include "codec/wire_ints.h"
#include "metrics/proxy_metrics.h"
#include "metrics/stream_metrics.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/served_probe.h"
#include "proxy/fencing/address_rewriter.h"
#include "proxy/net/clock.h"

namespace epochgate::proxy {

void record_proxy_latency(WorkerContext& ctx, const InFlightRequest& e) {
  if (!ctx.metrics) return;
  // Time epochgate held the request before forwarding plus the time it held
  // the response after the broker's answer; the broker's own time excluded.
  uint64_t now = now_ns();
  uint64_t held = e.forwarded_ns ? (e.forwarded_ns - e.received_ns) + (now - e.answered_ns)
                                 : now - e.received_ns;
  ctx.metrics->proxy_latency(static_cast<double>(held) / 1e9);
}

ResponseStream::ResponseStream(WorkerContext& ctx, int32_t node_id, Connection& client,
                               InFlightQueue& in_flight, const std::string& upstream_name,
                               SessionHost& host)
    : ctx_(ctx),
      node_id_(node_id),
      client_(client),
      in_flight_(in_flight),
      upstream_name_(upstream_name),
      host_(host) {}

bool ResponseStream::try_begin(ByteBuffer& in, size_t frame_size) {
  const uint32_t min_bytes = ctx_.config->limits.stream_fetch_min_bytes;
  if (parser_ || min_bytes == 0 || frame_size < min_bytes || frame_size < 8 || in.size() < 8 ||
      !ctx_.endpoints)
    return false;
  const int32_t corr = static_cast<int32_t>(read_be32(in.begin() + 4));
  InFlightRequest* e = in_flight_.peek_upstream(corr);
  // Anything that changes more than the tail, or that must wait for other
  // parts or older responses, is read whole (proxy/session/response_path.h).
  // A context that only names injected epochs does not: a broker's epoch
  // error for those comes in a small answer, read whole and rewritten
  // there; a response large enough to stream carries records, and a
  // partition errored beside them reaches the client as the broker sent it.
  if (e == nullptr || e->api_key != codec::kFetch ||
      (e->context && !only_injected(*e->context)) || e->reroute ||
      e->raw_sasl_token || e->upstream_version != e->api_version || !in_flight_.is_front(*e))
    return false;
  InFlightRequest* matched = nullptr;
  if (in_flight_.match_upstream(corr, &matched) != MatchResult::kMatched || matched != e)
    return false;  // peek said it matches: not reached
  uint64_t now = now_ns();
  e->answered_ns = now;
  if (ctx_.metrics) {
    ctx_.metrics->response(e->api_key);
    ctx_.metrics->upstream_latency(e->api_key, static_cast<double>(now - e->forwarded_ns) / 1e9);
    ctx_.metrics->stream().streamed();
  }
  request_ = e;
  frame_bytes_ = frame_size;
  parser_.emplace(e->upstream_version, frame_size - 4);
  client_.write_through(in.begin(), 4);  // the size prefix: the length never changes
  in.consume(4);
  return true;
}

ResponseStream::Step ResponseStream::relay(ByteBuffer& in) {
  size_t consumed = 0;
  FetchStreamParser::Result r = parser_->feed(in.begin(), in.size(), consumed);
  if (consumed > 0) {
    // Parsed bytes go out unchanged (records straight from the read buffer).
    client_.write_through(in.begin(), consumed);
    in.consume(consumed);
  }
  switch (r) {
    case FetchStreamParser::Result::kNeedMore:
      return Step::kMore;
    case FetchStreamParser::Result::kError: {
      const codec::Status& st = parser_->error();
      fail(metrics::close_reason(st.code), std::string("streamed FetchResponse from ") +
                                          upstream_name_ + ": " + parser_->error_detail() +
                                          " at byte " + std::to_string(st.offset));
      return Step::kClosed;
    }
    case FetchStreamParser::Result::kTail:
      break;
  }
  const size_t tail = parser_->tail_size();
  if (!finish(in.begin(), tail)) return Step::kClosed;
  in.consume(tail);
  if (ctx_.metrics) ctx_.metrics->stream().streamed_bytes(frame_bytes_);
  record_proxy_latency(ctx_, *request_);
  in_flight_.pop_front();
  request_ = nullptr;
  parser_.reset();
  last_spliced_ = std::exchange(spliced_, false);
  return Step::kDone;
}

bool ResponseStream::could_splice(const Connection& upstream) const {
  return ctx_.config->limits.splice_min_bytes != 0 && upstream.splice_fd() >= 0 &&
         client_.splice_fd() >= 0;
}

bool ResponseStream::may_splice(const Connection& upstream) const {
  return parser_ && could_splice(upstream);
}

size_t ResponseStream::first_read_bytes(const Connection& upstream) const {
  return last_spliced_ && !parser_ && could_splice(upstream) ? kSpliceFieldsReadBytes : 0;
}

size_t ResponseStream::next_read_bytes(const Connection& upstream) const {
  if (!may_splice(upstream)) return Connection::kMaxReadBytes;
  const size_t records = parser_->records_left();
  if (records == 0) return kSpliceFieldsReadBytes;
  // The rest of a run too short to splice (a pipe's worth was moved, less
  // than splice_min_bytes is left) and the fields behind it, not the next
  // partition's records, which a splice may take.
  if (records < ctx_.config->limits.splice_min_bytes) return records + kSpliceFieldsReadBytes;
  return Connection::kMaxReadBytes;
}

ssize_t ResponseStream::take_read_turn(Connection& upstream) {
  const uint32_t min_bytes = ctx_.config->limits.splice_min_bytes;
  // Bytes queued to the client go first: then the records wait in the
  // broker's socket until the queue is written (FlowControl paces the read).
  if (!may_splice(upstream) || parser_->records_left() < min_bytes || splice_error_ != 0 ||
      !client_.output_idle())
    return 0;
  const int from = upstream.splice_fd();
  const int to = client_.splice_fd();
  SplicePipe& pipe = ctx_.splice_pipe;
  if (!pipe.ready(now_ns())) {
    if (ctx_.metrics) ctx_.metrics->stream().splice_fallback(metrics::Direction::kUpstreamToClient, "no_pipe");
    return 0;
  }
  const SplicePipe::Spill spill = [this](const uint8_t* d, size_t n) { client_.queue(d, n); };
  SpliceRun run = pipe.run(
      from, to, [this] { return parser_->records_left(); }, min_bytes,
      ReadPacer::kSplicedBytesPerTurn, spill, [this](const SpliceStep& step) {
        parser_->pass_records(step.in);
        client_.count_spliced_out(step.out);  // queue() counted the spilled rest
        if (!ctx_.metrics) return;
        ctx_.metrics->stream().spliced(metrics::Direction::kUpstreamToClient, step.out);
        if (step.out < step.in)
          ctx_.metrics->stream().splice_fallback(metrics::Direction::kUpstreamToClient,
                                                 "client_full");
      });
  if (run.sink_error != 0) splice_error_ = run.sink_error;  // the session closes after the callback
  const size_t moved = run.moved;
  if (moved > 0) spliced_ = true;
  if (moved == 0 && run.source_error != 0) return static_cast<ssize_t>(run.source_error);
  // What follows the run (a partition's fields, the next one's header) is
  // read in this same turn: the socket had bytes to the run's end, so
  // returning to the poll first would cost a wake-up for nothing.
  if (run.run_ended && splice_error_ == 0 && parser_->left() > 0)
    upstream.read_after_turn(std::min(parser_->left(), next_read_bytes(upstream)));
  // Counted here: the session's own count of what reached the client starts
  // after this callback (spilled bytes were queued, so they count too).
  if (ctx_.metrics && moved > 0) ctx_.metrics->bytes(metrics::Direction::kUpstreamToClient, moved);
  return moved > 0 ? static_cast<ssize_t>(moved) : static_cast<ssize_t>(UV_EAGAIN);
}

bool ResponseStream::finish(const uint8_t* p, size_t n) {
  codec::FetchResponse& skel = parser_->skeleton();
  const int16_t version = parser_->version();
  // Learn first, while NodeEndpoints still name the upstream brokers.
  if (ctx_.fencing) ctx_.fencing->learn_response(&skel, version, node_id_);
  // Backfill (policy/hint_backfill.cc) would have hinted these (v16+).
  if (ctx_.fencing && ctx_.metrics && version >= 16 && parser_->unhinted_leader_errors() > 0)
    ctx_.metrics->stream().tail("hint_not_backfilled", parser_->unhinted_leader_errors());
  if (!skel.node_endpoints) {
    client_.write_through(p, n);  // no addresses: the tail as the broker sent it
    return true;
  }
  RewriteResult rw = rewrite_addresses(skel, version, *ctx_.endpoints);
  if (rw.failed) return fail(CloseReason::kEndpointUnmapped, "no listener for a broker node id in a response");
  const size_t section = parser_->tagged_section_size();
  FetchTailFit fit = fit_fetch_tail(skel.node_endpoints, parser_->other_tags(), version, section);
  if (!fit.ok)
    return fail(CloseReason::kStreamTailUnfit, "streamed FetchResponse from " + upstream_name_ +
                                         ": tagged fields cannot keep their length");
  if (ctx_.metrics) {
    if (rw.rewritten > 0) {
      ctx_.metrics->addresses_rewritten(codec::kFetch, static_cast<uint64_t>(rw.rewritten));
      for (int i = 0; i < rw.rewritten; ++i) ctx_.metrics->hint("rewritten");
    }
    if (fit.padded) ctx_.metrics->stream().tail("padded");
    if (fit.dropped > 0) ctx_.metrics->stream().tail("endpoints_dropped", fit.dropped);
  }
  client_.write_through(fit.bytes.data(), fit.bytes.size());
  if (n > section) client_.write_through(p + section, n - section);  // bytes after the body
  return true;
}

bool ResponseStream::fail(CloseReason reason, const std::string& detail) {
  // Part of the response reached the client already: only closing is honest.
  parser_.reset();
  spliced_ = last_spliced_ = false;
  request_ = nullptr;
  host_.frame_error(reason, detail);
  return false;
}

}  // namespace epochgate::proxy
