// fuzz/fuzz_pre_auth.cc: libFuzzer target for the pre-authentication path of
// a proxy::Session: what a client that has not logged in sends first
// (ApiVersions, SaslHandshake v0 and v1, raw SASL tokens, SaslAuthenticate),
// with and without a cluster that authenticates every client, on a real
// libuv loop over loopback (fuzz/session_rig.h). The fake broker answers
// each forwarded request with the codec's sample response, so the SASL
// framing (raw tokens after a v0 handshake, login success or failure) and
// the 512 KiB pre-authentication cap are driven by the input. Oracles,
// besides ASan and UBSan: the rig's (every handle closes, the session is
// freed, every buffer byte reported to the budget is given back).
//
// Input: [options u8][client bytes...]
//   bit 0: the cluster authenticates every client; bit 1: listener node 1
//   (else bootstrap); bits 2-3: bytes sent in 1-4 pieces.
#include <cstddef>
#include <cstdint>

#include "fuzz/session_rig.h"
#include "proxy/session/sasl_framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  epochgate::fuzz::RigOptions o;
  o.clients_must_authenticate = (data[0] & 1) != 0;
  o.node_id = (data[0] & 2) ? 1 : -1;
  o.fencing = false;
  o.auto_answer = true;
  // Above the cap, so the cap (not the general limit) is what refuses.
  o.max_frame_bytes = 2 * epochgate::proxy::kPreAuthMaxFrameBytes;
  size_t pieces = 1 + ((data[0] >> 2) & 3);
  const uint8_t* p = data + 1;
  size_t left = size - 1;

  epochgate::fuzz::SessionRig rig(o);
  size_t piece = left / pieces + 1;
  while (left > 0 && rig.session_alive()) {
    size_t n = left < piece ? left : piece;
    rig.client_send(p, n);
    rig.pump();
    p += n;
    left -= n;
  }
  return 0;
}
