// metrics/families.cc: names of the family table's enums (metrics/families.h).
#include "metrics/families.h"

namespace epochgate::metrics {

std::string_view kind_name(FamilyKind kind) {
  switch (kind) {
    case FamilyKind::kCounter: return "counter";
    case FamilyKind::kGauge: return "gauge";
    case FamilyKind::kHistogram: return "histogram";
  }
  return "unknown";
}

std::string_view section_name(DocSection section) {
  switch (section) {
    case DocSection::kTraffic: return "traffic";
    case DocSection::kMemory: return "memory";
    case DocSection::kFencing: return "fencing";
    case DocSection::kOperations: return "operations";
  }
  return "unknown";
}

}  // namespace epochgate::metrics
