#include "calibrate/model_shapes.hpp"

#include <stdexcept>
#include <string>

#include "common/format.hpp"
#include "common/input_error.hpp"

namespace meshplan::calibrate {

std::vector<GemmShape> model_gemm_shapes(const ModelSpec& model, std::int64_t tp, std::int64_t mbs,
                                         std::int64_t seq) {
  if (tp < 1 || mbs < 1 || seq < 1) {
    throw std::invalid_argument("model GEMMs: tp, mbs and seq must be >= 1");
  }
  LayerSetting setting;
  setting.seq = seq;
  setting.mbs = mbs;
  setting.tp = tp;
  const LayerOps ops = build_layer_ops(model, setting);
  std::vector<GemmShape> shapes;
  // The layer kinds the model has (a model whose layers are all MoE has no dense layer).
  std::vector<const std::vector<LayerOp>*> parts = {&ops.moe_layer, &ops.mtp, &ops.head};
  if (moe_layer_count(model) < model.num_layers) parts.insert(parts.begin(), &ops.layer);
  for (const std::vector<LayerOp>* part : parts) {
    for (const LayerOp& op : *part) {
      if (op.kind != LayerOpKind::kLinear) continue;
      const std::int64_t split = op.split == TpSplit::kColumn ? op.weight_out : op.weight_in;
      // The LM head's vocabulary shard is ceil(V / tp) (whole V / tp where Megatron pads to
      // 128 x tp); every other split linear's width must divide (a duplicated one, kNone, is
      // whole on every rank).
      if (op.name != "lm_head" && op.split != TpSplit::kNone && split % tp != 0) {
        throw std::invalid_argument(std::string("model GEMMs: tp ") + std::to_string(tp) +
                                    " does not divide the " + op.name + " width " +
                                    std::to_string(split) + " of " + model.name);
      }
      const GemmDims& g = op.gemm;
      const std::string prefix = "model " + model.name + " " + op.name;
      shapes.push_back({g.m, g.n, g.k, prefix + " forward"});
      shapes.push_back({g.m, g.k, g.n, prefix + " backward data"});
      shapes.push_back({g.k, g.n, g.m, prefix + " backward weight"});
    }
  }
  return shapes;
}

double gemm_operand_bytes(const GemmShape& s, double bytes_per_element) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               k = static_cast<double>(s.k);
  return (m * k + k * n + m * n) * bytes_per_element;
}

void check_model_gemm_memory(const std::vector<GemmShape>& shapes, double bytes_per_element,
                             const std::string& dtype, int ranks_sharing, double memory_bytes,
                             const std::string& memory_what, std::int64_t seq, std::int64_t mbs) {
  const GemmShape* largest = nullptr;
  double largest_bytes = 0;
  for (const GemmShape& s : shapes) {
    const double bytes = gemm_operand_bytes(s, bytes_per_element);
    if (bytes > largest_bytes) {
      largest_bytes = bytes;
      largest = &s;
    }
  }
  const double ranks = static_cast<double>(ranks_sharing < 1 ? 1 : ranks_sharing);
  const double limit = 0.5 * memory_bytes;
  if (largest == nullptr || largest_bytes * ranks <= limit) return;
  const std::string shape = std::to_string(largest->m) + " x " + std::to_string(largest->n) +
                            " x " + std::to_string(largest->k);
  std::string per_rank =
      "needs " + gib(largest_bytes) + " of " + dtype + " operands (A, B and C) per rank";
  if (ranks > 1) {
    per_rank += ", " + gib(largest_bytes * ranks) + " for the " +
                std::to_string(static_cast<int>(ranks)) + " ranks that share it";
  }
  throw InputError("--seq " + std::to_string(seq) + " --mbs " + std::to_string(mbs) +
                   ": the GEMM " + largest->source + " (m x n x k = " + shape + ", " +
                   std::to_string(mbs * seq) + " tokens = mbs x seq) " + per_rank +
                   ", more than half of " + memory_what + " (" + gib(memory_bytes) +
                   ", half: " + gib(limit) +
                   "); give a smaller --seq or --mbs (or a "
                   "larger --tp), so that mbs x seq tokens fit");
}

}  // namespace meshplan::calibrate
