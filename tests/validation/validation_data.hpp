// Where the published runs the validation tests compare with lie (MESHPLAN_SHARED_DATA, set by
// tests/CMakeLists.txt).
#pragma once

#include <string>

namespace meshplan::test {

/// The folder of the validation files: MESHPLAN_SHARED_DATA/validation.
inline std::string validation_dir() { return std::string(MESHPLAN_SHARED_DATA) + "/validation"; }

}  // namespace meshplan::test
