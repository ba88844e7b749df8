// meshplan: the planner's command line. All logic lives in run_cli (cli.cpp).
#include <iostream>

#include "planner/cli/cli.hpp"

int main(int argc, char** argv) {
  return meshplan::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
