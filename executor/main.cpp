// meshplan-run: replay a plan on this cluster and compare with its prediction (run_main.cpp).
#include "executor/run_main.hpp"

int main(int argc, char** argv) { return meshplan::executor::run_main(argc, argv); }
