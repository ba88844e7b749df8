#include "planner/cli/fold_option.hpp"

namespace meshplan {

void add_leave_out_option(CLI::App& cmd, std::string& leave_out) {
  cmd.add_option("--leave-out", leave_out,
                 "What the cross-validation leaves out at a time: study (a file's stem up to its "
                 "first '-': hagemann-selected and hagemann-sweep-13b, which share runs, go "
                 "together; the default) or file (each file alone: mbridge-2509, -2511 and -2602 "
                 "are one container release each)")
      ->check(CLI::IsMember({"study", "file"}));
}

Folds folds_named(const std::string& leave_out) {
  return leave_out == "file" ? Folds::kFile : Folds::kStudy;
}

}  // namespace meshplan
