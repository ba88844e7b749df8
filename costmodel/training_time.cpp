#include "costmodel/training_time.hpp"

#include "costmodel/units.hpp"

namespace meshplan {

TrainingTime time_to_train(double training_flops, std::int64_t gpus, double peak_flops_per_s,
                           double mfu) {
  TrainingTime t;
  const double n = static_cast<double>(gpus);
  t.seconds = training_flops / (n * peak_flops_per_s * mfu);
  t.days = t.seconds / kSecondsPerDay;
  t.years = t.seconds / kSecondsPerYear;
  t.gpu_hours = t.seconds * n / kSecondsPerHour;
  return t;
}

}  // namespace meshplan
