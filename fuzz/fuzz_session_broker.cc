// fuzz/fuzz_session_broker.cc: libFuzzer target for a whole proxy::Session fed
// arbitrary bytes from the broker side (and scripted client requests), on a
// real libuv loop over loopback (fuzz/session_rig.h). Each step runs the loop
// to quiescence, so the interleaving is what the input says. Oracles, besides
// ASan and UBSan: responses reach the client in request order with its own
// correlation ids; every handle closes, the session is freed and the
// connection count returns to zero.
//
// Input: [options u8] then steps: [kind u8][length u16 big-endian][payload]
//   kind % 4 == 0: the client sends a request frame (payload = header + body)
//   kind % 4 == 1: the broker answers the oldest forwarded request: size,
//                  its correlation id, then payload (header rest + body)
//   kind % 4 == 2: the broker sends payload as raw bytes
//   kind % 4 == 3: the client sends payload as raw bytes
//   options bits 0-1: listener node (-1, 1, 2, 3); bit 2: no fencing policy.
#include <cstddef>
#include <cstdint>

#include "fuzz/session_rig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const int32_t kNodes[] = {-1, 1, 2, 3};
  epochgate::fuzz::RigOptions o;
  o.node_id = kNodes[data[0] & 3];
  o.fencing = (data[0] & 4) == 0;
  o.auto_answer = false;
  size_t at = 1;

  epochgate::fuzz::SessionRig rig(o);
  while (size - at >= 3 && rig.session_alive()) {
    uint8_t kind = data[at];
    size_t len = (size_t{data[at + 1]} << 8) | data[at + 2];
    at += 3;
    if (len > size - at) len = size - at;
    const uint8_t* payload = data + at;
    at += len;
    switch (kind % 4) {
      case 0:
        rig.client_send_frame(payload, len);
        break;
      case 1:
        if (!rig.broker_answer(payload, len)) rig.broker_send(payload, len);
        break;
      case 2:
        rig.broker_send(payload, len);
        break;
      default:
        rig.client_send(payload, len);
        break;
    }
    rig.pump();
  }
  return 0;
}
