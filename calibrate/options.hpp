// meshplan-calibrate's command line (CLI11), validated at parse time. Every rank parses the
// same argv; only rank 0 prints help and errors.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace meshplan::calibrate {

struct Options {
  std::vector<std::string> what = {"all"};  ///< all | gemm | memory | collectives (several)
  std::string backend = "auto";             ///< cpu | cuda | auto
  bool quick = false;
  bool smoke = false;
  std::string out = "profile.json";
  std::string name;          ///< empty: the file name of --out without .json
  std::string gpu;           ///< empty: detected (cuda) or h100-sxm (cpu)
  std::string base_profile;  ///< empty: the published profile of --gpu
  std::string model;         ///< also time this model's GEMMs
  std::int64_t tp = 1;
  std::int64_t mbs = 1;
  std::int64_t seq = 0;  ///< 0: the model's seq_length
  double watchdog_s = 300;
  std::string inject_fault;  ///< KIND:RANK, tests only
};

/// Parses argv. Returns -1 to go on, or the exit code (0 after --help/--version, 2 for bad
/// input) after printing to `out`/`err` (pass discarding streams on ranks other than 0).
int parse_options(int argc, char** argv, Options& options, std::ostream& out, std::ostream& err);

}  // namespace meshplan::calibrate
