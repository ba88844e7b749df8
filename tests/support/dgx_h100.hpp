// A DGX H100 node as the placement and collective tests see it, built in the test (no presets):
// the fields of configs/clusters/dgx-h100.json that placement reads and the link rates of the
// published H100 defaults.
#pragma once

#include "costmodel/hardware.hpp"
#include "costmodel/profile.hpp"

namespace meshplan::test {

/// 8 GPUs per node in one 8-GPU NVLink domain (450 GB/s per GPU one direction), 8 NDR 400 NICs
/// (one per GPU, 50 GB/s line rate).
inline ClusterSpec dgx_h100() {
  ClusterSpec c;
  c.name = "dgx-h100";
  c.gpus_per_node = 8;
  c.nvlink_domain_size = 8;
  c.intra_node_bandwidth_bytes_per_s_per_gpu = 450e9;
  c.nics_per_node = 8;
  c.nic_bandwidth_bytes_per_s = 50e9;
  return c;
}

/// NVLink: 15 us latency, 370 GB/s busbw; one NIC per GPU at 46 GB/s busbw (nccl-tests issue
/// 290) with 46 us scale-out latency; no calibrated collective fits.
inline LinkProfile h100_links() {
  LinkProfile link;
  link.nvlink = {15e-6, 370e9, {}};
  link.nic_busbw_bytes_per_s = 46e9;
  link.scale_out_alpha_s = 46e-6;
  return link;
}

}  // namespace meshplan::test
