// tools/mockcluster: the line protocol spoken on stdin. One command per line,
// exactly one reply line per command ("OK [...]" or "ERR <reason>"). It must
// never write anything else to stdout: test harnesses read replies in lockstep.
#pragma once

#include <string>

#include "mock_cluster.h"

namespace epochgate::mockcluster {

/// Text of the `help` reply: every command on one line, separated by " | ".
std::string command_summary();

/// Interprets command lines against one MockCluster.
class CommandShell {
 public:
  explicit CommandShell(MockCluster& cluster) : cluster_(cluster) {}

  /// Runs one command line (without its newline) and returns the reply line
  /// (without newline). Sets `quit` when the command asks the program to end.
  std::string execute(const std::string& line, bool* quit);

 private:
  MockCluster& cluster_;
};

}  // namespace epochgate::mockcluster
