// metrics/families.h: the metric family table (metrics/families.def) as
// C++: one FamilyId per row, the rows as FamilySpec values, and
// register_family<Id>(), the only way epochgate registers a family. Owns
// names, types, label names and help texts; never creates a series (the
// typed fronts such as ProxyMetrics do, with bounded label values).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace epochgate::metrics {

/// The Prometheus type of a family.
enum class FamilyKind : uint8_t { kCounter, kGauge, kHistogram };
/// The docs/metrics.md table a family is listed in.
enum class DocSection : uint8_t { kTraffic, kMemory, kFencing, kOperations };
/// Whether a plain epochgate exposes a series of the family from the start
/// (kAtStart) or only after its first event (kOnUse).
enum class Presence : uint8_t { kAtStart, kOnUse };

/// One row of metrics/families.def.
struct FamilySpec {
  std::string_view name;    ///< "epochgate_" + the row's id
  FamilyKind kind;
  std::string_view labels;  ///< label names, comma-separated; "" for none
  DocSection section;
  Presence presence;
  std::string_view help;  ///< HELP text of the exposition
  std::string_view doc;   ///< docs/metrics.md's Meaning column (Markdown)
};

/// One id per row, in table order (the id is the name without "epochgate_").
enum class FamilyId : uint16_t {
#define EG_COUNTER(id, ...) id,
#define EG_GAUGE(id, ...) id,
#define EG_HISTOGRAM(id, ...) id,
#include "metrics/families.def"
#undef EG_COUNTER
#undef EG_GAUGE
#undef EG_HISTOGRAM
};

/// Every row, indexed by FamilyId.
inline constexpr FamilySpec kFamilies[] = {
#define EG_ROW(kind, id, labels, section, presence, help, doc)                                 \
  FamilySpec{"epochgate_" #id, FamilyKind::kind, labels, DocSection::section, Presence::presence, \
             help, doc},
#define EG_COUNTER(id, ...) EG_ROW(kCounter, id, __VA_ARGS__)
#define EG_GAUGE(id, ...) EG_ROW(kGauge, id, __VA_ARGS__)
#define EG_HISTOGRAM(id, ...) EG_ROW(kHistogram, id, __VA_ARGS__)
#include "metrics/families.def"
#undef EG_COUNTER
#undef EG_GAUGE
#undef EG_HISTOGRAM
#undef EG_ROW
};

/// The row of `id`.
constexpr const FamilySpec& family_spec(FamilyId id) {
  return kFamilies[static_cast<std::size_t>(id)];
}

/// The whole table, in docs order.
inline std::span<const FamilySpec> family_table() { return kFamilies; }

/// "counter", "gauge" or "histogram", as the exposition's TYPE line says.
std::string_view kind_name(FamilyKind kind);
/// "traffic", "memory", "fencing" or "operations": the docs block's marker.
std::string_view section_name(DocSection section);

/// The prometheus-cpp value type of a row: Counter, Gauge or Histogram.
template <FamilyId Id>
struct FamilyValue;
#define EG_VALUE(id, type) \
  template <>              \
  struct FamilyValue<FamilyId::id> {                  \
    using type_t = prometheus::type;                  \
  };
#define EG_COUNTER(id, ...) EG_VALUE(id, Counter)
#define EG_GAUGE(id, ...) EG_VALUE(id, Gauge)
#define EG_HISTOGRAM(id, ...) EG_VALUE(id, Histogram)
#include "metrics/families.def"
#undef EG_COUNTER
#undef EG_GAUGE
#undef EG_HISTOGRAM
#undef EG_VALUE

/// Registers the family of row `Id` in `registry` (name and HELP from the
/// row) and returns it; registering it again returns the same family.
/// prometheus-cpp exposes a family only once it has a series.
template <FamilyId Id>
prometheus::Family<typename FamilyValue<Id>::type_t>& register_family(
    prometheus::Registry& registry) {
  constexpr const FamilySpec& spec = family_spec(Id);
  return prometheus::detail::Builder<typename FamilyValue<Id>::type_t>()
      .Name(std::string(spec.name))
      .Help(std::string(spec.help))
      .Register(registry);
}

}  // namespace epochgate::metrics
