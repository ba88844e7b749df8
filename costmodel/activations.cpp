#include "costmodel/activations.hpp"

namespace meshplan {

std::vector<SavedTensor> layer_saved_tensors(const LayerOps& ops) {
  return saved_tensors(ops.layer, ops.setting.recompute);
}

std::vector<SavedTensor> embedding_saved_tensors(const LayerOps& ops) {
  return saved_tensors(ops.embedding, ops.setting.recompute);
}

std::vector<SavedTensor> head_saved_tensors(const LayerOps& ops) {
  return saved_tensors(ops.head, ops.setting.recompute);
}

std::vector<SavedTensor> mtp_saved_tensors(const LayerOps& ops, Recompute recompute) {
  if (ops.mtp.empty()) return {};
  std::vector<SavedTensor> out = saved_tensors(ops.mtp, recompute);
  for (const LayerOp& op : ops.head) {
    if (op.params_group == ParamGroup::kFinalNorm) continue;  // the depth's own: mtp_final_norm
    for (SavedTensor t : op.saved[static_cast<std::size_t>(recompute)]) {
      t.name = "mtp." + t.name;
      out.push_back(std::move(t));
    }
  }
  return out;
}

double total_bytes(const std::vector<SavedTensor>& tensors) {
  double sum = 0;
  for (const SavedTensor& t : tensors) sum += t.bytes;
  return sum;
}

}  // namespace meshplan
