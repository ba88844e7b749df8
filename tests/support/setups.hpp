// Training setups the tests share.
#pragma once

#include <cstdint>

#include "costmodel/framework.hpp"
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

}  // namespace meshplan::test
