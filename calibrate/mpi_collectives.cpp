#include "calibrate/mpi_collectives.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <vector>

#include "calibrate/collective_verify.hpp"
#include "common/mpi_context.hpp"
#include "kernels/patterns.hpp"

namespace meshplan::calibrate {

namespace {

class MpiCollectiveGroup final : public CollectiveGroup {
 public:
  MpiCollectiveGroup(MPI_Comm comm, std::int64_t max_count) : comm_(comm) {
    if (max_count > INT_MAX) {
      throw std::invalid_argument("MPI collectives: " + std::to_string(max_count) +
                                  " elements exceed MPI's int counts");
    }
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    send_.resize(static_cast<std::size_t>(max_count));
    recv_.assign(static_cast<std::size_t>(max_count), 0.0f);
    for (std::size_t i = 0; i < send_.size(); ++i) {
      send_[i] = collective_send_value(rank_, static_cast<std::int64_t>(i));
    }
  }

  std::int64_t run_and_check(Collective collective, std::int64_t count) override {
    const BufferCounts counts = buffer_counts(collective, count, size_);
    if (collective == Collective::kBroadcast) {  // in place: root holds the data, others not
      for (std::int64_t i = 0; i < counts.recv; ++i) {
        recv_[static_cast<std::size_t>(i)] =
            rank_ == 0 ? send_[static_cast<std::size_t>(i)] : -1.0f;
      }
    } else {
      std::fill(recv_.begin(), recv_.begin() + counts.recv, -1.0f);
    }
    run(collective, count);
    return count_wrong(collective, rank_, size_, count, recv_.data());
  }

  double run_timed(Collective collective, std::int64_t count, int iterations) override {
    const double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) run(collective, count);
    return (MPI_Wtime() - start) / iterations;
  }

 private:
  void run(Collective collective, std::int64_t count) {
    const int c = static_cast<int>(count);
    const int chunk = c / size_;
    float* send = send_.data();
    float* recv = recv_.data();
    switch (collective) {
      case Collective::kAllReduce:
        check_mpi(MPI_Allreduce(send, recv, c, MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
        return;
      case Collective::kAllGather:
        check_mpi(MPI_Allgather(send, chunk, MPI_FLOAT, recv, chunk, MPI_FLOAT, comm_),
                  "MPI_Allgather");
        return;
      case Collective::kReduceScatter:
        check_mpi(MPI_Reduce_scatter_block(send, recv, chunk, MPI_FLOAT, MPI_SUM, comm_),
                  "MPI_Reduce_scatter_block");
        return;
      case Collective::kAllToAll:
        check_mpi(MPI_Alltoall(send, chunk, MPI_FLOAT, recv, chunk, MPI_FLOAT, comm_),
                  "MPI_Alltoall");
        return;
      case Collective::kSendRecv: {
        const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
        check_mpi(MPI_Sendrecv(send, c, MPI_FLOAT, next, 0, recv, c, MPI_FLOAT, prev, 0, comm_,
                               MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
        return;
      }
      case Collective::kBroadcast:
        check_mpi(MPI_Bcast(recv, c, MPI_FLOAT, 0, comm_), "MPI_Bcast");
        return;
    }
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<float> send_, recv_;
};

}  // namespace

std::unique_ptr<CollectiveGroup> make_mpi_collective_group(MPI_Comm group, std::int64_t max_count) {
  return std::make_unique<MpiCollectiveGroup>(group, max_count);
}

}  // namespace meshplan::calibrate
