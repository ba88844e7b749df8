// The fuzz targets (issue 24): one per reader of a user's file (model presets and Hugging Face
// configs, GPU, cluster, profile, plan.json, validation files) and one for the meshplan command
// line. A target runs one input and returns the exit code the command would give; it throws
// FuzzFailure when the outcome breaks the promise every input is held to: exit code 0, 2 or 3
// (3: the CLI's "does not fit"), an error about a file naming that file, every message one
// line, never an internal error. Sanitizer reports and signals end the process (the driver's
// caller sees them).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace meshplan::fuzz {

/// An outcome that breaks the promise: what() says which and how.
class FuzzFailure : public std::runtime_error {
 public:
  explicit FuzzFailure(const std::string& what) : std::runtime_error(what) {}
};

struct Target {
  std::string name;  ///< "model", "gpu", "cluster", "profile", "plan", "validation", "cli"
  /// Runs `input` (a file's bytes; for "cli", the arguments one per line) in `scratch`, a
  /// folder of its own. Returns 0 (accepted) or 2 (refused; 3 for "cli"); throws FuzzFailure.
  int (*run)(const std::string& input, const std::string& scratch);
  /// The seed inputs: the shipped files of that kind (configs/, tests/data, the published runs
  /// of ../shared/data/validation), or for "plan" plans written by meshplan itself.
  std::vector<std::string> (*seeds)(const std::string& source_dir, const std::string& data_dir);
};

/// Every target, in a fixed order.
const std::vector<Target>& targets();

}  // namespace meshplan::fuzz
