// Time to train: total FLOPs / (GPUs x dense peak FLOP/s x MFU).
// MFU, model FLOPs utilization (Chowdhery et al. 2022, PaLM, appendix B), is the share of the
// dense peak that the model's FLOPs achieve.
#pragma once

#include <cstdint>

namespace meshplan {

/// Wall time and GPU time to run `training_flops` (FLOP) of training.
struct TrainingTime {
  double seconds = 0;    ///< wall-clock seconds
  double days = 0;       ///< seconds / 86400
  double years = 0;      ///< seconds / (365.25 x 86400)
  double gpu_hours = 0;  ///< seconds x gpus / 3600
};

/// Preconditions: training_flops >= 0, gpus > 0, peak_flops_per_s > 0, 0 < mfu <= 1.
TrainingTime time_to_train(double training_flops, std::int64_t gpus, double peak_flops_per_s,
                           double mfu);

}  // namespace meshplan
