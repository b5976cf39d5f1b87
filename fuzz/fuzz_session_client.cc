// fuzz/fuzz_session_client.cc: libFuzzer target for a whole proxy::Session fed
// arbitrary bytes from the client side, on a real libuv loop over loopback
// (fuzz/session_rig.h). The fake broker answers every forwarded request with
// the codec's sample response of that API and version (and answers acks=0
// Produce too, as librdkafka's mock cluster does). Oracles, besides ASan and
// UBSan: responses reach the client in request order with its own
// correlation ids; no upstream host reaches the client; every handle closes,
// the session is freed and the connection count returns to zero.
//
// Input: [options u8][client bytes...]
//   options bits 0-1: listener node (-1, 1, 2, 3); bit 2: no fencing policy;
//   bits 3-4: bytes sent in 1-4 pieces, the loop run to quiescence between.
#include <cstddef>
#include <cstdint>

#include "fuzz/session_rig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const int32_t kNodes[] = {-1, 1, 2, 3};
  epochgate::fuzz::RigOptions o;
  o.node_id = kNodes[data[0] & 3];
  o.fencing = (data[0] & 4) == 0;
  o.auto_answer = true;
  size_t pieces = 1 + ((data[0] >> 3) & 3);
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
