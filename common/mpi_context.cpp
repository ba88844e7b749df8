#include "common/mpi_context.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>

namespace meshplan {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw MpiError(std::string(call) + ": " + std::string(text, static_cast<std::size_t>(length)));
}

MpiContext discover_mpi_context(MPI_Comm world, int thread_level) {
  MpiContext c;
  c.world = world;
  c.thread_level = thread_level;
  check_mpi(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(world, &c.rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(world, &c.size), "MPI_Comm_size");

  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  check_mpi(MPI_Comm_rank(local, &c.local_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(local, &c.local_size), "MPI_Comm_size");
  // A node is named by the smallest world rank on it.
  int leader = c.rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local), "MPI_Allreduce");
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(c.size));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, world), "MPI_Allgather");
  std::map<int, int> index;
  for (const int l : leaders) index.emplace(l, 0);
  int next = 0;
  for (auto& e : index) e.second = next++;
  c.nodes = next;
  for (const int l : leaders) c.node_of_rank.push_back(index[l]);

  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  check_mpi(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
  std::vector<char> all(static_cast<std::size_t>(c.size) * MPI_MAX_PROCESSOR_NAME);
  check_mpi(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                          MPI_MAX_PROCESSOR_NAME, MPI_CHAR, world),
            "MPI_Allgather");
  for (int r = 0; r < c.size; ++r) {
    const char* h = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    c.hosts.emplace_back(h, strnlen(h, MPI_MAX_PROCESSOR_NAME));
  }

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  check_mpi(MPI_Get_library_version(version, &length), "MPI_Get_library_version");
  std::string text(version, static_cast<std::size_t>(length));
  const std::size_t line_end = text.find_first_of("\n,");
  c.library_version = text.substr(0, line_end);
  return c;
}

double mean_over_ranks(MPI_Comm comm, double value) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  return value / size;
}

double max_over_ranks(MPI_Comm comm, double value) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  return value;
}

std::int64_t sum_over_ranks(MPI_Comm comm, std::int64_t value) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  return value;
}

bool all_ranks(MPI_Comm comm, bool value) {
  int v = value ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return v == 1;
}

std::vector<int> ranks_where_false(MPI_Comm comm, bool value) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  int v = value ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&v, 1, MPI_INT, all.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) {
    if (all[static_cast<std::size_t>(r)] == 0) ranks.push_back(r);
  }
  return ranks;
}

int run_mpi_program(const char* program, int argc, char** argv,
                    int (*run)(int argc, char** argv, int thread_level)) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::cerr << program << ": MPI_Init_thread failed\n";
    return kRunFailureExitCode;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int code = kRunFailureExitCode;
  try {
    code = run(argc, argv, provided);
  } catch (const std::exception& e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(host, &length);
    std::cerr << program << ": rank " << rank << " (" << host << "): error: " << e.what()
              << "; aborting the job\n"
              << std::flush;
    MPI_Abort(MPI_COMM_WORLD, kRunFailureExitCode);
  }
  MPI_Finalize();
  return code;
}

}  // namespace meshplan
