// The six collectives, for tests that go through all of them.
#pragma once

#include "costmodel/collectives/collective.hpp"

namespace meshplan::test {

/// Every Collective, in the enum's order (index i is static_cast<std::size_t>(collective)).
inline constexpr Collective kAllCollectives[] = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
    Collective::kAllToAll,  Collective::kSendRecv,  Collective::kBroadcast};

}  // namespace meshplan::test
