// Exact parameter counts against published totals (HF `num_parameters()` for Llama; the GPT-3
// paper's 175B). Each total is derived in a comment from the formula of param_count.hpp.
#include <catch2/catch.hpp>

#include "costmodel/param_count.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;

TEST_CASE("llama2-7b has 6,738,415,616 parameters", "[params]") {
  // embedding and untied head 2 x 32000 x 4096 = 262,144,000; per layer 4 x 4096^2 (attention)
  // + 3 x 4096 x 11008 (SwiGLU) + 2 x 4096 (RMSNorms) = 202,383,360, x 32 = 6,476,267,520;
  // final norm 4096. Sum 6,738,415,616.
  const ParamCount c = count_params(load_model("llama2-7b"));
  CHECK(c.per_layer.total() == 202'383'360);
  CHECK(c.lm_head == 131'072'000);
  CHECK(c.total == 6'738'415'616);
}

TEST_CASE("llama3 8B, 70B and 405B counts are exact", "[params]") {
  // 8B: 2 x 128256 x 4096 = 1,050,673,152 + 32 x (4096 x (4096 + 2 x 1024) + 4096^2
  // + 3 x 4096 x 14336 + 8192) = 32 x 218,112,000 = 6,979,584,000, + 4096 = 8,030,261,248.
  CHECK(count_params(load_model("llama3-8b")).total == 8'030'261'248);
  CHECK(count_params(load_model("llama3-70b")).total == 70'553'706'496);
  CHECK(count_params(load_model("llama3-405b")).total == 405'853'388'800);
}

TEST_CASE("gpt3-175b is 174.6e9 within 0.1%", "[params]") {
  // Per layer 12 h^2 + 13 h (h = 12288, biases, two LayerNorms) = 1,812,099,072, x 96;
  // embedding 50257 x h, learned positions 2048 x h, final LayerNorm 2h, tied head:
  // 174,604,259,328.
  const ParamCount c = count_params(load_model("gpt3-175b"));
  CHECK(c.total == 174'604'259'328);
  CHECK(c.position_embedding == 2048 * 12288);
  CHECK(c.lm_head == 0);
  CHECK(static_cast<double>(c.total) == Approx(174.6e9).epsilon(0.001));
}

TEST_CASE("vocabulary padding adds whole rows", "[params]") {
  ModelSpec m = load_model("gpt3-175b");
  m.vocab_pad_multiple = 128;  // 50257 -> 50304 rows: 47 more rows of h = 12288
  CHECK(padded_vocab_size(m) == 50304);
  CHECK(count_params(m).total - 174'604'259'328 == 47 * 12288);
}

TEST_CASE("GQA shrinks only the k and v projections", "[params]") {
  ModelSpec m = load_model("llama3-8b");
  const std::int64_t gqa = count_params(m).per_layer.attention;
  m.num_kv_heads = m.num_attention_heads;  // MHA: k and v grow from 1024 to 4096 columns
  CHECK(count_params(m).per_layer.attention - gqa == 2 * 4096 * (4096 - 1024));
}
