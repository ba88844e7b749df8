// Training setups the tests share.
#pragma once

#include <cstdint>

#include "costmodel/framework.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"

namespace meshplan::test {

/// Megatron-LM's convention, bf16, flash attention, at sequence length `seq`.
inline TrainingSetup megatron_setup(std::int64_t seq) {
  TrainingSetup s;
  s.seq = seq;
  s.framework = *find_framework("megatron");
  s.attention = AttentionImpl::kFlash;
  return s;
}

/// The README's layout for llama3-70b on 64 H100s: tp 8, pp 4, dp 2, sp, ZeRO-1, selective
/// recompute, gbs 64 in micro-batches of 1 (kReadmeEstimate in cli_runner.hpp, as CLI flags).
inline Layout readme_layout() {
  Layout l;
  l.dp = 2;
  l.tp = 8;
  l.pp = 4;
  l.mbs = 1;
  l.gbs = 64;
  l.zero = 1;
  l.sp = true;
  l.recompute = Recompute::kSelective;
  return l;
}

}  // namespace meshplan::test
