// proxy/app/version.h: the version string --version and epochgate_build_info report.
#pragma once

namespace epochgate::proxy {
inline constexpr const char* kVersion = "0.1.0";
}
