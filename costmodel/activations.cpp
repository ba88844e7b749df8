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

double total_bytes(const std::vector<SavedTensor>& tensors) {
  double sum = 0;
  for (const SavedTensor& t : tensors) sum += t.bytes;
  return sum;
}

}  // namespace meshplan
