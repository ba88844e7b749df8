#include "common/backend_choice.hpp"

#include "common/input_error.hpp"
#include "common/mpi_context.hpp"

namespace meshplan {

bool use_cuda_backend(const std::string& flag, MPI_Comm world, bool usable_here,
                      const std::string& why, std::vector<std::string>& notes) {
  const std::vector<int> without = ranks_where_false(world, usable_here);
  const bool everywhere = without.empty();
  if (flag == "cuda" && !everywhere) {
    std::string ranks;
    for (const int r : without) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    throw InputError("--backend cuda: no usable CUDA device on rank(s) " + ranks +
                     (usable_here ? std::string() : " (here: " + why + ")") +
                     "; use --backend cpu");
  }
  if (flag == "auto" && !everywhere) {
    notes.push_back("--backend auto: no usable CUDA device on every rank (rank 0: " +
                    (usable_here ? std::string("has one") : why) + "); using the CPU backend");
  }
  return flag == "cuda" || (flag == "auto" && everywhere);
}

}  // namespace meshplan
