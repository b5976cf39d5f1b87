// codec/frame_splitter.cc
#include "codec/frame_splitter.h"

#include <algorithm>

namespace epochgate::codec {

FrameScan scan_frame(const uint8_t* data, size_t len, uint32_t max_frame_size) {
  if (len < 4) return FrameScan{FrameScan::Kind::kNeedMore, 4, Errc::kOk};
  int32_t size = static_cast<int32_t>((uint32_t{data[0]} << 24) | (uint32_t{data[1]} << 16) |
                                      (uint32_t{data[2]} << 8) | uint32_t{data[3]});
  if (size < 0) return FrameScan{FrameScan::Kind::kError, 0, Errc::kNegativeFrameSize};
  if (static_cast<uint32_t>(size) > max_frame_size)
    return FrameScan{FrameScan::Kind::kError, 0, Errc::kFrameTooLarge};
  size_t total = 4 + static_cast<size_t>(size);
  if (len < total) return FrameScan{FrameScan::Kind::kNeedMore, total, Errc::kOk};
  return FrameScan{FrameScan::Kind::kFrame, static_cast<size_t>(size), Errc::kOk};
}

size_t FrameSplitter::feed(const uint8_t* data, size_t len) {
  size_t used = 0;
  if (ready_ || failed()) return 0;
  while (prefix_have_ < 4 && used < len) prefix_[prefix_have_++] = data[used++];
  if (prefix_have_ < 4) return used;
  if (want_ == 0 && payload_.empty()) {
    FrameScan s = scan_frame(prefix_, 4, max_frame_size_);
    if (s.kind == FrameScan::Kind::kError) {
      error_ = s.error;
      return used;
    }
    want_ = s.kind == FrameScan::Kind::kFrame ? 0 : s.size - 4;
    payload_.reserve(want_);
    if (want_ == 0) {
      ready_ = true;
      return used;
    }
  }
  size_t take = std::min(len - used, want_ - payload_.size());
  payload_.insert(payload_.end(), data + used, data + used + take);
  used += take;
  if (payload_.size() == want_) ready_ = true;
  return used;
}

void FrameSplitter::next() {
  prefix_have_ = 0;
  want_ = 0;
  payload_.clear();
  ready_ = false;
}

}  // namespace epochgate::codec
