#include "common/watchdog.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>

#include "common/mpi_context.hpp"

namespace meshplan {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kAbortCode = 3;
constexpr int kTagModulus = 32000;  // MPI guarantees tags up to 32767
constexpr int kBeatTag = 1;

/// One write, so messages from several ranks do not interleave mid-line.
void print_line(const std::string& text) {
  const std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out.precision(3);
  out << s << " s";
  return out.str();
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

Watchdog::Watchdog(MPI_Comm world, std::string program, std::string timeout_flag,
                   std::vector<std::string> hosts, double timeout_s, bool thread_may_call_mpi)
    : program_(std::move(program)),
      timeout_flag_(std::move(timeout_flag)),
      hosts_(std::move(hosts)),
      timeout_s_(timeout_s),
      thread_may_call_mpi_(thread_may_call_mpi) {
  check_mpi(MPI_Comm_dup(world, &checkpoints_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(checkpoints_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_dup(world, &beats_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(beats_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(world, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(world, &size_), "MPI_Comm_size");
  reached_.assign(static_cast<std::size_t>(size_), "(start)");
  last_beat_.assign(static_cast<std::size_t>(size_), Clock::now());
  next_beat_ = Clock::now();
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // While an exception propagates the other ranks are not here: no collective calls (main.cpp
  // aborts the job next).
  if (std::uncaught_exceptions() > 0) return;
  MPI_Barrier(beats_);
  if (rank_ <= 1 && thread_may_call_mpi_) {  // drain the last heartbeats (rank 0's, rank 1's)
    for (;;) {
      int pending = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kBeatTag, beats_, &pending, &status) != MPI_SUCCESS ||
          !pending) {
        break;
      }
      int value = 0;
      MPI_Recv(&value, 1, MPI_INT, status.MPI_SOURCE, kBeatTag, beats_, MPI_STATUS_IGNORE);
    }
  }
  MPI_Comm_free(&beats_);
  MPI_Comm_free(&checkpoints_);
}

void Watchdog::step(const std::string& label) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    label_ = label;
    started_ = Clock::now();
  }
  const int tag = sequence_++ % kTagModulus;
  if (size_ == 1) return;
  if (rank_ != 0) {
    check_mpi(MPI_Send(&tag, 1, MPI_INT, 0, tag, checkpoints_), "MPI_Send (watchdog checkpoint)");
    return;
  }
  std::vector<int> values(static_cast<std::size_t>(size_));
  std::vector<MPI_Request> requests(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) {
    check_mpi(MPI_Irecv(&values[static_cast<std::size_t>(r)], 1, MPI_INT, r, tag, checkpoints_,
                        &requests[static_cast<std::size_t>(r)]),
              "MPI_Irecv (watchdog checkpoint)");
  }
  const Clock::time_point deadline = Clock::now() + seconds(timeout_s_);
  int pending = size_ - 1;
  for (int spin = 0; pending > 0; ++spin) {
    for (int r = 1; r < size_; ++r) {
      MPI_Request& request = requests[static_cast<std::size_t>(r)];
      if (request == MPI_REQUEST_NULL) continue;
      int done = 0;
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (watchdog checkpoint)");
      if (done) {
        reached_[static_cast<std::size_t>(r)] = label;
        --pending;
      }
    }
    if (pending == 0) break;
    if (Clock::now() > deadline) {
      std::ostringstream missing;
      std::string last;
      int count = 0;
      for (int r = 1; r < size_; ++r) {
        if (requests[static_cast<std::size_t>(r)] == MPI_REQUEST_NULL) continue;
        missing << (count++ ? ", " : "") << r << " (" << hosts_[static_cast<std::size_t>(r)] << ")";
        last = reached_[static_cast<std::size_t>(r)];
      }
      abort_job(program_ + ": rank 0 (" + hosts_[0] + "): rank" + (count > 1 ? "s " : " ") +
                    missing.str() + " did not reach step '" + label + "' within " +
                    seconds_text(timeout_s_) + " (the " + timeout_flag_ +
                    " timeout; last step reached: '" + last + "'): dead or hung; aborting the job",
                false);
    }
    if (spin > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void Watchdog::idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void Watchdog::heartbeat(Clock::time_point now) {
  // Every rank but 0 beats to rank 0; rank 0 beats to rank 1, which watches it (a frozen rank 0
  // is then named, instead of every other rank's step timer saying "this one, or a peer").
  if (now >= next_beat_) {
    next_beat_ = now + seconds(std::min(1.0, timeout_s_ / 4));
    const int beat = 1;
    check_mpi(MPI_Send(&beat, 1, MPI_INT, rank_ == 0 ? 1 : 0, kBeatTag, beats_),
              "MPI_Send (heartbeat)");
  }
  if (rank_ > 1) return;
  for (;;) {
    int pending = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kBeatTag, beats_, &pending, &status), "MPI_Iprobe");
    if (!pending) break;
    int value = 0;
    check_mpi(MPI_Recv(&value, 1, MPI_INT, status.MPI_SOURCE, kBeatTag, beats_, MPI_STATUS_IGNORE),
              "MPI_Recv (heartbeat)");
    last_beat_[static_cast<std::size_t>(status.MPI_SOURCE)] = now;
  }
  // Rank 0 watches every other rank; rank 1 watches rank 0.
  const int first = rank_ == 0 ? 1 : 0;
  const int last = rank_ == 0 ? size_ : 1;
  for (int r = first; r < last; ++r) {
    const double silent =
        std::chrono::duration<double>(now - last_beat_[static_cast<std::size_t>(r)]).count();
    if (silent > timeout_s_) {
      abort_job(program_ + ": rank " + std::to_string(rank_) + " (" +
                    hosts_[static_cast<std::size_t>(rank_)] + "): rank " + std::to_string(r) +
                    " (" + hosts_[static_cast<std::size_t>(r)] + ") has sent no heartbeat for " +
                    seconds_text(silent) + " (the " + timeout_flag_ +
                    " timeout): its process is dead, "
                    "frozen or unreachable; aborting the job",
                true);
    }
  }
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_) break;
    const Clock::time_point now = Clock::now();
    if (thread_may_call_mpi_ && size_ > 1) {
      try {
        heartbeat(now);
      } catch (const MpiError& e) {
        abort_job(program_ + ": rank " + std::to_string(rank_) + " (" +
                      hosts_[static_cast<std::size_t>(rank_)] + "): watchdog: " + e.what() +
                      "; aborting the job",
                  true);
      }
    }
    if (!armed_) continue;
    const double running = std::chrono::duration<double>(now - started_).count();
    // Rank 0's checkpoint and heartbeats name a missing rank after timeout_s; the step timer
    // waits a little longer so that the more precise message comes first when both apply.
    if (running > timeout_s_ * 1.1 + 1.0) {
      const std::string label = label_;
      lock.unlock();
      abort_job(program_ + ": rank " + std::to_string(rank_) + " (" +
                    hosts_[static_cast<std::size_t>(rank_)] + "): step '" + label +
                    "' has run for " + seconds_text(running) + ", longer than the " +
                    timeout_flag_ + " timeout of " + seconds_text(timeout_s_) +
                    ": a rank has died or hangs (this one, or a peer it waits for); aborting "
                    "the job",
                true);
    }
  }
}

void Watchdog::abort_job(const std::string& message, bool from_thread) {
  print_line(message);
  if (!from_thread || thread_may_call_mpi_) MPI_Abort(MPI_COMM_WORLD, kAbortCode);
  std::_Exit(kAbortCode);
}

}  // namespace meshplan
