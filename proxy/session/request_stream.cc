// proxy/session/request_stream.cc
#include "proxy/session/request_stream.h"

#include <uv.h>

#include <algorithm>
#include <vector>

#include "codec/api_table.h"
#include "codec/header.h"
#include "metrics/proxy_metrics.h"
#include "metrics/stream_metrics.h"
#include "proxy/core/request_frame.h"
#include "proxy/net/clock.h"
#include "proxy/net/read_pacer.h"

namespace epochgate::proxy {

using metrics::Direction;

RequestStream::RequestStream(WorkerContext& ctx, Connection& client, RequestPath& requests,
                             SessionHost& host)
    : ctx_(ctx), client_(client), requests_(requests), host_(host) {}

bool RequestStream::may_splice() const {
  return ctx_.config->limits.splice_min_bytes != 0 && upstream_ != nullptr &&
         upstream_->splice_fd() >= 0 && client_.splice_fd() >= 0;
}

bool RequestStream::try_begin(ByteBuffer& in, size_t frame_size) {
  const uint32_t min_bytes = ctx_.config->limits.splice_min_bytes;
  closed_ = false;
  waits_for_upstream_ = false;
  if (parser_ || !may_splice() || frame_size < 4 + size_t{min_bytes} || in.size() < 8)
    return false;
  const uint8_t* payload = in.begin() + 4;
  const size_t have = std::min(in.size(), frame_size) - 4;
  int16_t key = 0, version = 0;
  int32_t corr = 0;
  if (!codec::peek_request_ids(payload, have, key, version, corr) || key != codec::kProduce)
    return false;
  // A frame the plan would not forward as it is is asked once, not at
  // every read of its bytes.
  if (corr == declined_corr_ && frame_size == declined_size_) return false;
  // Only onto an upstream with nothing being written: the head then goes
  // out at once, and the records can follow it socket to socket. A few
  // bytes queued in this turn (the previous streamed request's last
  // fields, read with this head) go first in the same write, not in one
  // of their own followed by a read of this head's next bytes. Otherwise
  // the client's reads wait (FlowControl) while a splice's worth is still
  // to come: reading on would copy the bytes a splice moves once the
  // upstream's queue is out.
  if (!upstream_->output_unsent(kQueuedBeforeHeadBytes)) {
    waits_for_upstream_ = frame_size - 4 - have >= min_bytes;
    return false;
  }
  const codec::ApiInfo* info = codec::api_info(codec::kProduce);
  if (info == nullptr || version < info->min_version || version > info->max_version) return false;
  // The head is parsed once across reads (a frame arriving in many small
  // reads costs each byte one parse), and never past kMaxHeadBytes.
  if (!head_ || head_corr_ != corr || head_frame_ != frame_size || head_parsed_ > have) {
    head_.emplace(version, frame_size - 4);
    head_parsed_ = 0;
    head_corr_ = corr;
    head_frame_ = frame_size;
  }
  size_t consumed = 0;
  const ProduceStreamParser::Result r =
      head_->feed(payload + head_parsed_, have - head_parsed_, consumed);
  head_parsed_ += consumed;
  if (r == ProduceStreamParser::Result::kError) {
    parser_ = std::move(head_);
    head_.reset();
    return fail("Produce request");
  }
  if (r == ProduceStreamParser::Result::kNeedMore && head_parsed_ <= kMaxHeadBytes) return false;
  ProduceStreamParser parser = std::move(*head_);
  head_.reset();
  // Decided for this frame now, whichever way: a head too long (many
  // partitions), a last partition without records or with too few to
  // come, or a plan that would not forward it as it is: read whole.
  declined_corr_ = corr;
  declined_size_ = frame_size;
  if (r != ProduceStreamParser::Result::kLastRecords) return false;
  const size_t head = parser.head_size();
  const uint64_t records_in = std::min<uint64_t>(have - head, parser.last_records_size());
  if (parser.last_records_size() - records_in < min_bytes) return false;
  // The decision reads every field but the records: it gets the head with
  // the last partition's records empty (and empty tagged sections).
  std::vector<uint8_t> decided(payload, payload + parser.records_length_offset());
  if (version >= 9)
    decided.insert(decided.end(), {1, 0, 0, 0});  // compact empty bytes, three tag sections
  else
    decided.insert(decided.end(), {0, 0, 0, 0});  // int32 length 0
  RequestFrame f;
  f.data = decided.data();
  f.size = decided.size();
  if (!requests_.forward_head(f)) return false;
  declined_corr_ = 0;
  declined_size_ = 0;
  parser_.emplace(std::move(parser));
  upstream_->write_through(in.begin(), 4 + head);
  in.consume(4 + head);
  return true;
}

RequestStream::Step RequestStream::relay(ByteBuffer& in) {
  size_t consumed = 0;
  ProduceStreamParser::Result r = parser_->feed(in.begin(), in.size(), consumed);
  if (consumed > 0) {
    // Parsed bytes go out unchanged (records straight from the read buffer).
    upstream_->write_through(in.begin(), consumed);
    in.consume(consumed);
  }
  switch (r) {
    case ProduceStreamParser::Result::kNeedMore:
    case ProduceStreamParser::Result::kLastRecords:
      return Step::kMore;
    case ProduceStreamParser::Result::kError:
      fail("streamed Produce request");
      return Step::kClosed;
    case ProduceStreamParser::Result::kDone:
      break;
  }
  parser_.reset();
  return Step::kDone;
}

bool RequestStream::splicing() const {
  return parser_ && may_splice() && parser_->in_last_partition() &&
         parser_->records_left() >= kTailSpliceBytes && splice_error_ == 0;
}

ssize_t RequestStream::take_read_turn() {
  // Bytes queued to the broker go first: the records then wait in the
  // client's socket until the queue is written (FlowControl::update_client
  // stops the reads meanwhile).
  if (!splicing() || !upstream_->output_idle()) return 0;
  SplicePipe& pipe = ctx_.splice_pipe;
  if (!pipe.ready(now_ns())) {
    if (ctx_.metrics) ctx_.metrics->stream().splice_fallback(Direction::kClientToUpstream, "no_pipe");
    return 0;
  }
  const int from = client_.splice_fd();
  const int to = upstream_->splice_fd();
  Connection& upstream = *upstream_;
  const SplicePipe::Spill spill = [&upstream](const uint8_t* d, size_t n) { upstream.queue(d, n); };
  SpliceRun run = pipe.run(
      from, to, [this] { return parser_->records_left(); }, kTailSpliceBytes,
      ReadPacer::kSplicedBytesPerTurn, spill, [this, &upstream](const SpliceStep& step) {
        parser_->pass_records(step.in);
        upstream.count_spliced_out(step.out);  // queue() counted the spilled rest
        if (!ctx_.metrics) return;
        ctx_.metrics->stream().spliced(Direction::kClientToUpstream, step.out);
        if (step.out < step.in)
          ctx_.metrics->stream().splice_fallback(Direction::kClientToUpstream, "upstream_full");
      });
  if (run.sink_error != 0) splice_error_ = run.sink_error;  // the session closes after the callback
  const size_t moved = run.moved;
  if (moved == 0 && run.source_error != 0) return static_cast<ssize_t>(run.source_error);
  // The run's last bytes (fewer than kTailSpliceBytes) and the fields
  // behind them are read in this same turn, not after another wake-up,
  // with the next frame's head if it came (kHeadReadBytes: the session
  // handles it only once this frame ended, and its head then leaves in
  // the same write as this frame's last bytes).
  if (run.run_ended && splice_error_ == 0 && parser_->left() > 0)
    client_.read_after_turn(std::min(parser_->left() + kHeadReadBytes, Connection::kMaxReadBytes));
  // Counted here: the session counts only bytes that passed through its input.
  if (ctx_.metrics && moved > 0) ctx_.metrics->bytes(Direction::kClientToUpstream, moved);
  return moved > 0 ? static_cast<ssize_t>(moved) : static_cast<ssize_t>(UV_EAGAIN);
}

bool RequestStream::fail(const std::string& what) {
  // Part of the request may have reached the broker: only closing is honest.
  const codec::Status st = parser_->error();
  const std::string detail = what + ": " + parser_->error_detail() + " at byte " +
                             std::to_string(st.offset);
  parser_.reset();
  closed_ = true;
  host_.frame_error(metrics::close_reason(st.code), detail);
  return false;
}

}  // namespace epochgate::proxy
