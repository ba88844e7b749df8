// meshplan: the planner's command line. All logic lives in run_cli (cli.cpp).
#include <iostream>

#include "planner/cli/cli.hpp"

int main(int argc, char** argv) {
  const int code =
      meshplan::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "meshplan: error: writing the output failed (disk full or closed pipe?)\n";
    return 1;
  }
  return code;
}
