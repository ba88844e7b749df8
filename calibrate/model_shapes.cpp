#include "calibrate/model_shapes.hpp"

#include <stdexcept>
#include <string>

namespace meshplan::calibrate {

std::vector<GemmShape> model_gemm_shapes(const ModelSpec& model, std::int64_t tp, std::int64_t mbs,
                                         std::int64_t seq) {
  if (tp < 1 || mbs < 1 || seq < 1) {
    throw std::invalid_argument("model GEMMs: tp, mbs and seq must be >= 1");
  }
  const std::int64_t tokens = mbs * seq;
  const std::int64_t h = model.hidden_size;
  const std::int64_t q = model.num_attention_heads * model.head_dim;
  const std::int64_t kv = model.num_kv_heads * model.head_dim;
  const std::int64_t f = model.ffn_hidden_size;
  const std::int64_t up = model.ffn_type == FfnType::kSwiglu ? 2 * f : f;
  const std::int64_t vocab = padded_vocab_size(model);

  std::vector<GemmShape> shapes;
  auto linear = [&](const char* name, std::int64_t in, std::int64_t out, bool split_out) {
    const std::int64_t split = split_out ? out : in;
    if (split % tp != 0) {
      throw std::invalid_argument(std::string("model GEMMs: tp ") + std::to_string(tp) +
                                  " does not divide the " + name + " width " +
                                  std::to_string(split) + " of " + model.name);
    }
    if (split_out)
      out /= tp;
    else
      in /= tp;
    const std::string prefix = "model " + model.name + " " + name;
    shapes.push_back({tokens, out, in, prefix + " forward"});
    shapes.push_back({tokens, in, out, prefix + " backward data"});
    shapes.push_back({in, out, tokens, prefix + " backward weight"});
  };
  linear("qkv", h, q + 2 * kv, true);
  linear("proj", q, h, false);
  linear("fc1", h, up, true);
  linear("fc2", f, h, false);
  // Megatron pads the vocabulary to a multiple of 128 x tp, so V / t is whole there; round up
  // here for presets padded otherwise.
  const std::int64_t head_out = (vocab + tp - 1) / tp;
  const std::string head = "model " + model.name + " lm_head";
  shapes.push_back({tokens, head_out, h, head + " forward"});
  shapes.push_back({tokens, h, head_out, head + " backward data"});
  shapes.push_back({h, head_out, tokens, head + " backward weight"});
  return shapes;
}

}  // namespace meshplan::calibrate
