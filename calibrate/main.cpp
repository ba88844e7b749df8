// meshplan-calibrate: measure a cluster and write the profile `meshplan --profile` reads.
// All logic lives in calibrate_main (calibrate_main.cpp); launch with mpirun/srun.
#include "calibrate/calibrate_main.hpp"

int main(int argc, char** argv) { return meshplan::calibrate::calibrate_main(argc, argv); }
