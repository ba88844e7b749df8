#include "common/config_dir.hpp"

#include <cstdlib>

#ifndef MESHPLAN_CONFIG_DIR
#error "MESHPLAN_CONFIG_DIR must be defined by the build"
#endif

namespace meshplan {

std::string config_dir() {
  const char* env = std::getenv("MESHPLAN_CONFIG_DIR");
  return env && *env ? std::string(env) : std::string(MESHPLAN_CONFIG_DIR);
}

}  // namespace meshplan
