// The kernels a published run names in its notes where SCHEMA.md keeps only
// `training.flash_attention`. Hagemann et al. 2023's sweep (../shared/data/calibration/
// hagemann-sweep-13b.json, validation/hagemann-selected.json) ran Aleph Alpha's codebase with
// five attention/norm kernel settings that differ by up to 1.7x in step time; each row's notes
// keep the sheet's name: "attention kernel 'flash_attention2 + RMS kernel' -> flash_attention
// true".
#pragma once

#include <string>
#include <vector>

#include "costmodel/framework.hpp"

namespace meshplan {

/// Applies the kernel `notes` names after "attention kernel '" to `framework`, and appends what
/// it did to `assumptions`:
///   'flash_attention2 + RMS kernel': FlashAttention-2, and the norm as FlashAttention-2's fused
///     RMSNorm kernel beside otherwise eager ops (ElementwiseKernels::kEagerFusedNorm) where the
///     convention runs them eager;
///   'flash_attention2': FlashAttention-2 (FlashKernel::kFlashAttention2);
///   'flash_attentionv1...': FlashAttention 1.x (FlashKernel::kFlashAttention1);
///   'fused' and 'torch' (eager attention, flash_attention false): unchanged; 'torch' (PyTorch's
///     unfused softmax chain) is noted as costed as the fused softmax kernel.
/// Notes without the phrase, or with a name not above, change nothing. Raises nothing.
void apply_stated_kernels(const std::string& notes, FrameworkConvention& framework,
                          std::vector<std::string>& assumptions);

}  // namespace meshplan
