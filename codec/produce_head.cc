// codec/produce_head.cc: the in-place walk of a Produce request body. Each
// step is the generated ProduceRequest::read's (build/generated/codec/
// messages/produce.cc) with the same Reader calls, so that the walk refuses
// exactly what the decode refuses: strings as views instead of copies,
// records and unknown tagged fields passed over instead of kept.
#include "codec/produce_head.h"

#include <algorithm>

#include "codec/field_io.h"

namespace epochgate::codec {

namespace {

// A decision on a Produce reads no partition epoch: were one added to the
// schema, this walk would have to read it too.
static_assert(!PartitionShape<ProduceRequest>::kHasEpoch);
static_assert(!PartitionShape<ProduceRequest>::kBrokerSession);

// wire::read_tags with no known tags, keeping nothing: each unknown field
// still counts one entry against the cap, as the decode counts it.
void skip_tags(Reader& r) {
  uint32_t n = r.tagged_count();
  int64_t prev = -1;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    uint32_t tag = 0, size = 0;
    if (!r.tag_header(prev, tag, size)) return;
    prev = tag;
    if (!r.take_entries(1)) return;
    r.raw(size);
  }
}

}  // namespace

Status ProduceHead::read(const uint8_t* body, size_t len, int16_t version,
                         DecodeBounds& bounds) {
  using TopicData = ProduceRequest::TopicProduceData;
  using PartitionData = ProduceRequest::PartitionProduceData;
  Reader r(body, len);
  r.set_max_entries(bounds.max_entries);
  topics.clear();
  all_partitions.clear();
  if (version < ProduceRequest::kMinVersion || version > ProduceRequest::kMaxVersion) {
    r.fail(Errc::kUnsupportedVersion, kName);
  } else {
    const int16_t v = version;
    const bool flex = ProduceRequest::is_flexible(v);
    r.set_field("TransactionalId");
    if (v >= 3) r.nullable_string_view(flex);
    r.set_field("Acks");
    acks = r.int16();
    r.set_field("TimeoutMs");
    r.int32();
    r.set_field("TopicData");
    const int32_t n = r.array_length(flex, false, wire::elem_min_size<TopicData>(v, flex));
    if (n > 0 && r.ok() && r.take_entries(static_cast<uint64_t>(n))) {
      // As wire::get_elems: no more room than the bytes left could fill.
      topics.reserve(std::min(static_cast<size_t>(n), r.remaining() / sizeof(Topic) + 1));
      for (int32_t ti = 0; ti < n && r.ok(); ++ti) {
        Topic& t = topics.emplace_back();
        r.set_field("Name");
        if (v <= 12) t.name = r.string_view(flex);
        r.set_field("TopicId");
        if (v >= 13) t.topic_id = r.uuid();
        r.set_field("PartitionData");
        const int32_t pn =
            r.array_length(flex, false, wire::elem_min_size<PartitionData>(v, flex));
        t.partition_count = 0;
        if (pn > 0 && r.ok() && r.take_entries(static_cast<uint64_t>(pn))) {
          for (int32_t pi = 0; pi < pn && r.ok(); ++pi) {
            Partition& p = all_partitions.emplace_back();
            r.set_field("Index");
            p.index = r.int32();
            r.set_field("Records");
            r.bytes(flex, true);
            if (flex) skip_tags(r);
          }
          t.partition_count = static_cast<uint32_t>(pn);
        }
        if (flex && r.ok()) skip_tags(r);
      }
    }
    if (flex && r.ok()) skip_tags(r);
  }
  bounds.entries = r.entries();
  bounds.decoded_bytes =
      topics.capacity() * sizeof(Topic) + all_partitions.capacity() * sizeof(Partition);
  if (!r.ok()) return r.status();
  size_t at = 0;
  for (Topic& t : topics) {
    t.partitions = {all_partitions.data() + at, t.partition_count};
    at += t.partition_count;
  }
  return r.status();
}

void ProduceHead::trim() {
  if (topics.capacity() > kKeptEntries) std::vector<Topic>().swap(topics);
  if (all_partitions.capacity() > kKeptEntries) std::vector<Partition>().swap(all_partitions);
}

}  // namespace epochgate::codec
