// metrics/close_reason.h: every reason epochgate closes a proxied connection
// for, declared once. Its name is the `reason` label of
// epochgate_connections_closed_total (and, for frame errors, of
// epochgate_frame_errors_total) and the word log lines give, so names are
// stable: dashboards and alerts match them. Never a string chosen by a peer.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string_view>

#include "codec/status.h"

namespace epochgate::metrics {

/// X(id, name, kind, seeded):
///   kind   kClose: closed without a bad frame; kFrame: a malformed, refused
///          or unfit frame (also counted in epochgate_frame_errors_total)
///   seeded the frame-error series exists at 0 from the start (an alert's)
/// The codec's reasons carry codec::errc_name's names (a test pins that).
#define EPOCHGATE_CLOSE_REASONS(X)                                                     \
  X(kClientClosed, "client_closed", kClose, false)           /* client sent EOF */      \
  X(kUpstreamClosed, "upstream_closed", kClose, false)       /* broker sent EOF */      \
  X(kClientError, "client_error", kClose, false)             /* client socket error */  \
  X(kUpstreamError, "upstream_error", kClose, false)         /* broker socket error */  \
  X(kUpstreamUnreachable, "upstream_unreachable", kClose, false) /* no broker dialed */ \
  X(kDrain, "drain", kClose, false)                /* shutting down, answers written */ \
  X(kShutdown, "shutdown", kClose, false)          /* drain time over */                \
  X(kIdleTimeout, "idle_timeout", kClose, false)                                        \
  X(kAcceptFailed, "accept_failed", kClose, false) /* not adopted by a worker */    \
  X(kTlsUnavailable, "tls_unavailable", kClose, false) /* no server TLS context */      \
  X(kFencedAcks0, "fenced_acks0", kClose, false) /* a fenced acks=0 Produce */          \
  X(kSaslLoginFailed, "sasl_login_failed", kClose, false) /* own login on behalf */     \
  X(kMaxConnections, "max_connections", kFrame, true)                                   \
  X(kPartialFrameTimeout, "partial_frame_timeout", kFrame, true)                        \
  X(kPreAuthFrameTooLarge, "pre_auth_frame_too_large", kFrame, false)                   \
  X(kMalformedRequest, "malformed_request", kFrame, true)                               \
  X(kMalformedResponse, "malformed_response", kFrame, true)                             \
  X(kUnexpectedCorrelationId, "unexpected_correlation_id", kFrame, true)                \
  X(kUnexpectedSaslToken, "unexpected_sasl_token", kFrame, true)                        \
  X(kEndpointUnmapped, "endpoint_unmapped", kFrame, true)                               \
  X(kStreamTailUnfit, "stream_tail_unfit", kFrame, false)                               \
  X(kTruncated, "truncated", kFrame, true)                                              \
  X(kLengthOverflow, "length_overflow", kFrame, false)                                  \
  X(kBadVarint, "bad_varint", kFrame, false)                                            \
  X(kNegativeLength, "negative_length", kFrame, false)                                  \
  X(kUnexpectedNull, "unexpected_null", kFrame, false)                                  \
  X(kUnsupportedVersion, "unsupported_version", kFrame, true)                           \
  X(kBadTaggedFields, "bad_tagged_fields", kFrame, false)                               \
  X(kFrameTooLarge, "frame_too_large", kFrame, true)                                    \
  X(kNegativeFrameSize, "negative_frame_size", kFrame, true)                            \
  X(kTrailingBytes, "trailing_bytes", kFrame, false)                                    \
  X(kTooManyPartitions, "too_many_partitions", kFrame, false)

/// Why a proxied connection closed.
enum class CloseReason : uint8_t {
#define EPOCHGATE_CLOSE_REASON_ID(id, name, kind, seeded) id,
  EPOCHGATE_CLOSE_REASONS(EPOCHGATE_CLOSE_REASON_ID)
#undef EPOCHGATE_CLOSE_REASON_ID
};

/// Number of CloseReason values.
inline constexpr std::size_t kCloseReasonCount = 0
#define EPOCHGATE_CLOSE_REASON_ONE(id, name, kind, seeded) +1
    EPOCHGATE_CLOSE_REASONS(EPOCHGATE_CLOSE_REASON_ONE)
#undef EPOCHGATE_CLOSE_REASON_ONE
    ;

/// The reason's label value and log word, e.g. "idle_timeout".
std::string_view close_reason_name(CloseReason r);
/// True when `r` is a frame error (counted in epochgate_frame_errors_total too).
bool is_frame_error(CloseReason r);
/// True when the frame-error series of `r` exists at 0 from the start.
bool frame_error_seeded(CloseReason r);
/// The frame error a failed decode closes with (its name is errc_name(e));
/// `e` is never Errc::kOk, which gives kMalformedRequest.
CloseReason close_reason(codec::Errc e);

}  // namespace epochgate::metrics
