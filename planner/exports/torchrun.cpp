// The torchrun export: a plan's launch lines (torch/distributed/run.py's parser).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"

namespace meshplan::exports {

Export export_torchrun(const Plan& p, const FrameworkVersion& version) {
  const Layout& l = p.layout;
  Export e;
  const std::string header = "# " + version_line("torchrun launch lines", version) + "\n";
  const std::int64_t gpus = l.gpus();
  const std::int64_t per_node_max = p.cluster.gpus_per_node > 0 ? p.cluster.gpus_per_node : gpus;
  if (gpus <= per_node_max) {
    e.text = header + "torchrun --standalone --nproc-per-node " + s(gpus) + " train.py\n";
    return e;
  }
  std::int64_t per_node = per_node_max;
  if (gpus % per_node_max != 0) {
    // torchrun starts the same number of processes on every node: the largest count that
    // divides the GPUs keeps the world size the plan's.
    while (gpus % per_node != 0) --per_node;
    std::string why = "GPU count " + s(gpus) + " is not a multiple of " + s(per_node_max) +
                      " GPUs per node: torchrun starts the same number of processes on every "
                      "node, so this launches " +
                      s(gpus / per_node) + " nodes x " + s(per_node) + " GPUs (rounded down from " +
                      s(per_node_max) + " per node; the plan packed the ranks onto " +
                      s((gpus + per_node_max - 1) / per_node_max) + " nodes)";
    if (per_node % l.tp != 0) why += "; tp " + s(l.tp) + " groups then span nodes";
    e.dropped.push_back(why);
  }
  const std::int64_t nodes = gpus / per_node;
  // Static rendezvous (torchrun's default backend): the node given --node-rank k runs global
  // ranks k x G .. k x G + G - 1, so the plan's rank order (tp innermost, groups placed by rank)
  // holds. c10d would give node ranks in arrival order and ignore --node-rank (run.py reads it
  // only for rdzv_backend static), which can scatter a tp group or an NVLink domain.
  const std::string common = "--nnodes " + s(nodes) + " --nproc-per-node " + s(per_node) +
                             " --rdzv-backend static --master-addr $MASTER_ADDR --master-port "
                             "29500";
  e.text = header + "# on each of the " + s(nodes) + " nodes, NODE_RANK 0.." + s(nodes - 1) +
           " in the plan's order (node k runs global ranks " + s(per_node) + "k .. " + s(per_node) +
           "k + " + s(per_node - 1) +
           "), MASTER_ADDR the address of node 0:\n"
           "torchrun " +
           common +
           " --node-rank $NODE_RANK train.py\n"
           "# or under Slurm, one task per node (node rank = SLURM_NODEID, the allocation's "
           "sorted node order), with\n"
           "# MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1):\n"
           "srun --nodes " +
           s(nodes) + " --ntasks-per-node 1 bash -c 'torchrun " + common +
           " --node-rank $SLURM_NODEID train.py'\n";
  if (p.cluster.nvlink_domain_size > per_node) {
    const std::int64_t trays = p.cluster.nvlink_domain_size / per_node;
    e.to_add.push_back(
        "NVLink domains of " + s(p.cluster.nvlink_domain_size) + " GPUs (" + p.cluster.name +
        "): the plan puts node ranks " + s(trays) + "d .. " + s(trays) + "d + " + s(trays - 1) +
        " in NVLink domain d; number the nodes so that each rack's " + counted(trays, "node") +
        " hold consecutive node ranks (under Slurm, allocate whole racks in rack order, e.g. "
        "with the block topology plugin and --segment " +
        s(trays) + "), or groups the plan keeps in one domain cross the scale-out network");
  }
  return e;
}

}  // namespace meshplan::exports
