#include "planner/config/spec_json.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "common/input_error.hpp"
#include "costmodel/collectives/collective.hpp"
#include "costmodel/counted.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/fit/fitted_json.hpp"

namespace meshplan {

namespace {

// ---------------------------------------------------------------------------------------------
// Reading (strict: configs/README.md, configs/profiles/README.md)
// ---------------------------------------------------------------------------------------------

/// Checks "schema" and returns the reader of the object at `path`, which must be a JSON object.
StrictObject open_schema(const nlohmann::json& json, const std::string& file,
                         const std::string& path, const std::string& schema,
                         std::vector<std::string> keys) {
  // The schema first: a file of another kind is named as such, not as a list of unknown keys.
  if (json.is_object() && json.contains("schema") && json.at("schema") != schema) {
    throw InputError(file + ": " + path + ".schema: is " + describe_json(json.at("schema")) +
                     "; expected \"" + schema + "\" (is this the right kind of file?)");
  }
  keys.insert(keys.begin(), "schema");
  StrictObject o(json, file, path, std::move(keys));
  o.string("schema");
  return o;
}

/// Every key of `o.sources` must be one of `numbers` or `optional`, and each of `numbers` must
/// have a source string with some text in it (configs/README.md: each hardware number with its
/// source); `optional` keys may be absent and are not checked. Throws InputError at
/// "$.sources.<key>" (StrictObject::text): "is empty; expected where the number comes from", or
/// for a string of whitespace alone (spaces, tabs, newlines) "is only whitespace ("   ");
/// expected where the number comes from".
void require_sources(StrictObject& o, const std::vector<std::string>& numbers,
                     const std::vector<std::string>& optional = {}) {
  std::vector<std::string> keys = numbers;
  keys.insert(keys.end(), optional.begin(), optional.end());
  StrictObject sources = o.object("sources", keys);
  for (const std::string& key : numbers) sources.text(key, "where the number comes from");
}

double bounded(StrictObject& o, const nlohmann::json& raw, const std::string& key, double lo,
               bool lo_closed, double hi, const std::string& expected);

/// Finds the GPU named under "gpu" of a cluster (reporting through `o`).
using GpuResolver = std::function<GpuSpec(StrictObject& o, const std::string& name)>;

ClusterSpec parse_cluster(const nlohmann::json& json, const std::string& file,
                          const std::string& path, const GpuResolver& resolve_gpu) {
  StrictObject o = open_schema(json, file, path, "meshplan-cluster/1",
                               {"name", "description", "gpu", "gpus_per_node", "nvlink_domain_size",
                                "intra_node", "scale_out", "sources"});
  ClusterSpec c;
  c.name = o.text("name", "the cluster's name (a preset's is its file name)");
  c.description = o.string("description");
  c.gpu = resolve_gpu(o, o.string("gpu"));
  c.gpus_per_node = o.positive_int("gpus_per_node", kMaxWidth);
  c.nvlink_domain_size = o.positive_int("nvlink_domain_size", kMaxWidth);
  StrictObject intra = o.object("intra_node", {"link", "bandwidth_bytes_per_s_per_gpu"});
  c.intra_node_link = intra.string("link");
  // Line rates (costmodel/placement.hpp, tier_line_rate): 1e8 bytes/s (below 1 GbE) to 1e15
  // (beyond any link), so that every collective time stays finite.
  c.intra_node_bandwidth_bytes_per_s_per_gpu =
      bounded(intra, json.at("intra_node"), "bandwidth_bytes_per_s_per_gpu", 1e8, true, 1e15,
              "a number of bytes/s per GPU, one direction, from 1e8 to 1e15");
  StrictObject scale_out =
      o.object("scale_out", {"fabric", "nics_per_node", "nic_bandwidth_bytes_per_s"});
  c.scale_out_fabric = scale_out.choice("fabric", {"infiniband", "roce", "ethernet"});
  c.nics_per_node = scale_out.positive_int("nics_per_node", kMaxWidth);
  c.nic_bandwidth_bytes_per_s =
      bounded(scale_out, json.at("scale_out"), "nic_bandwidth_bytes_per_s", 1e8, true, 1e15,
              "a number of bytes/s per NIC, one direction, from 1e8 to 1e15");
  require_sources(o, {"intra_node", "scale_out"});
  if (const std::string problem = nvlink_domain_problem(c.nvlink_domain_size, c.gpus_per_node);
      !problem.empty()) {
    o.fail("nvlink_domain_size", problem);
  }
  return c;
}

// Profile fields outside StrictObject's accessors.

/// Upper bounds of the integer fields: far beyond any GPU (tiles of 256, 132 SMs) or cluster
/// (1e5 GPUs) while keeping tile x SM products inside int64.
constexpr std::int64_t kMaxTile = std::int64_t{1} << 16;
constexpr std::int64_t kMaxSms = std::int64_t{1} << 16;
constexpr std::int64_t kMaxGroupSize = std::int64_t{1} << 24;

/// The number under `key` of the object `raw` that `o` reads (StrictObject has no accessor for
/// these two ranges). Missing keys and non-numbers are reported like StrictObject does.
double number(StrictObject& o, const nlohmann::json& raw, const std::string& key,
              const char* expected) {
  if (!raw.contains(key)) o.fail(key, std::string("missing; expected ") + expected);
  const nlohmann::json& v = raw.at(key);
  if (!v.is_number()) o.fail(key, std::string("must be ") + expected + ", got " + describe_json(v));
  return v.get<double>();
}

/// The number under `key` checked against `lo` < d <= `hi` (or `lo` <= d when `lo_closed`),
/// reported as "must be <expected>" where `expected` states the range. The bounds keep every
/// time the cost model forms finite and positive: a profile number past them describes no
/// hardware (a latency of hours, a billionth of a peak).
double bounded(StrictObject& o, const nlohmann::json& raw, const std::string& key, double lo,
               bool lo_closed, double hi, const std::string& expected) {
  const double d = number(o, raw, key, expected.c_str());
  if (!((lo_closed ? d >= lo : d > lo) && d <= hi)) {
    o.fail(key, "must be " + expected + ", got " + describe_json(raw.at(key)));
  }
  return d;
}

/// An efficiency: a fraction of a peak, in (0, 1] (1 allowed: a perfect rate is not an error;
/// below 1e-9, a billionth of the peak, no device runs).
double efficiency(StrictObject& o, const nlohmann::json& raw, const std::string& key) {
  return bounded(o, raw, key, 1e-9, true, 1, "a number in (0, 1], at least 1e-9");
}

/// A latency in seconds: in [0, 1] (no collective waits a second before its first byte).
double latency(StrictObject& o, const nlohmann::json& raw, const std::string& key) {
  return bounded(o, raw, key, 0, true, 1, "a number of seconds in [0, 1]");
}

/// A bus bandwidth in bytes/s: in [1e3, 1e15] (a kB/s to a PB/s).
double bus_bandwidth(StrictObject& o, const nlohmann::json& raw, const std::string& key) {
  return bounded(o, raw, key, 1e3, true, 1e15, "a number of bytes/s in [1e3, 1e15]");
}

/// {"alpha_s": [0, 1] s, "busbw_bytes_per_s": [1e3, 1e15]} as read in `o` (object `raw`).
TierBandwidth tier_bandwidth(StrictObject& o, const nlohmann::json& raw) {
  TierBandwidth t;
  t.alpha_s = latency(o, raw, "alpha_s");
  t.busbw_bytes_per_s = bus_bandwidth(o, raw, "busbw_bytes_per_s");
  return t;
}

/// The number under `key` as a whole number of bytes in [lo, hi]; `expected` states the range
/// ("a whole number of bytes from 1048576 (2^20) to ...").
double whole_bytes_in(StrictObject& o, const nlohmann::json& raw, const std::string& key, double lo,
                      double hi, const std::string& expected) {
  const double d = number(o, raw, key, expected.c_str());
  if (!(d >= lo && d <= hi) || std::floor(d) != d) {
    o.fail(key, "must be " + expected + ", got " + describe_json(raw.at(key)));
  }
  return d;
}

// The bounds of meshplan-gpu/1 (configs/README.md). Each is far beyond any GPU made (an H100:
// 85.5e9 bytes of HBM at 3.35e12 bytes/s, 989e12 dense BF16 FLOP/s; a V100's FP32: 15.7e12)
// yet keeps every time and byte count the cost model forms finite: a peak of 1e-300 FLOP/s made
// the step time infinite, and the error then blamed the profile.
constexpr double kMinGpuMemoryBytes = 1048576.0;             ///< 2^20: a MiB
constexpr double kMaxGpuMemoryBytes = 1125899906842624.0;    ///< 2^50: a PiB
constexpr double kMaxCudaContextBytes = 1099511627776.0;     ///< 2^40: a TiB
constexpr double kMinPeakFlops = 1e9, kMaxPeakFlops = 1e18;  ///< FLOP/s: a GFLOP/s to an EFLOP/s
constexpr double kMinHbmBytesPerS = 1e9, kMaxHbmBytesPerS = 1e15;  ///< a GB/s to a PB/s
/// A measured curve point's message size, bytes: whole, 1 to 2^50.
constexpr double kMaxPointBytes = 1125899906842624.0;
/// A measured curve point's busbw floor, bytes/s (parse_busbw_points says why not 1e3).
constexpr double kMinPointBusbw = 1.0;

/// A dense peak of the GPU under `key` of `peaks` (object `raw`): FLOP/s in [1e9, 1e18], or null
/// where the GPU has no tensor cores of that type.
std::optional<double> peak_flops_or_null(StrictObject& peaks, const nlohmann::json& raw,
                                         const std::string& key) {
  if (raw.contains(key) && raw.at(key).is_null()) return std::nullopt;
  return bounded(peaks, raw, key, kMinPeakFlops, true, kMaxPeakFlops,
                 "a number of FLOP/s from 1e9 to 1e18 (a dense peak), or null where the GPU "
                 "has no such tensor cores");
}

/// A byte count the schema calls an integer: written as one when it is a whole number that a
/// double holds exactly (below 2^53), else as the number it is.
nlohmann::json whole_bytes(double bytes) {
  if (std::floor(bytes) == bytes && std::fabs(bytes) < 9007199254740992.0) {
    return static_cast<std::int64_t>(bytes);
  }
  return bytes;
}

/// A fit's measured curve: [{"bytes": whole, 1 to 2^50, "busbw_bytes_per_s": [1, 1e15]}, ...] in
/// ascending, distinct sizes (as nccl-tests prints them), at least one point.
std::vector<BusbwPoint> parse_busbw_points(const nlohmann::json& raw, const StrictObject& fit) {
  if (!raw.is_array()) {
    fit.fail("points",
             "must be a non-empty array of {\"bytes\", \"busbw_bytes_per_s\"} in "
             "ascending bytes, got " +
                 describe_json(raw));
  }
  if (raw.empty()) {
    fit.fail("points",
             "is empty; expected at least one {\"bytes\", \"busbw_bytes_per_s\"} "
             "point in ascending bytes, or no \"points\" key when none was measured");
  }
  std::vector<BusbwPoint> points;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    StrictObject o(raw.at(i), fit.file(), fit.path() + ".points" + at,
                   {"bytes", "busbw_bytes_per_s"});
    // A measured point may be far below any link's rate: an 8-byte collective that took 14 ms
    // on a loaded machine is 572 bytes/s of bus bandwidth, and still a measurement; so its floor
    // is not the [1e3, 1e15] of the fitted busbw fields (bus_bandwidth) but 1 byte/s, which
    // keeps the time it implies at most bytes x 2 s (a factor F <= 2) and every step time the
    // cost model reads off the curve finite (1e-300 made a step take 1e307 s).
    const BusbwPoint point{whole_bytes_in(o, raw.at(i), "bytes", 1, kMaxPointBytes,
                                          "a whole number of bytes from 1 to 1125899906842624 "
                                          "(2^50), the message size of the measurement"),
                           bounded(o, raw.at(i), "busbw_bytes_per_s", kMinPointBusbw, true, 1e15,
                                   "a number of bytes/s from 1 to 1e15")};
    if (!points.empty() && !(point.bytes > points.back().bytes)) {
      fit.fail("points" + at + ".bytes", describe_json(whole_bytes(point.bytes)) +
                                             " must be larger than the point before it (" +
                                             describe_json(whole_bytes(points.back().bytes)) +
                                             "): sizes ascend, each once");
    }
    points.push_back(point);
  }
  return points;
}

CollectiveFit parse_fit(const nlohmann::json& raw, const std::string& file,
                        const std::string& path) {
  StrictObject o(raw, file, path,
                 {"collective", "tier", "group_size", "alpha_s", "busbw_bytes_per_s", "points"});
  CollectiveFit fit;
  const std::string name = o.choice("collective", {"all_reduce", "all_gather", "reduce_scatter",
                                                   "all_to_all", "send_recv", "broadcast"});
  fit.collective = *parse_collective(name);  // one of to_string's names, checked just above
  fit.tier =
      o.choice("tier", {"nvlink", "scale_out"}) == "nvlink" ? Tier::kNvlink : Tier::kScaleOut;
  fit.group_size = o.positive_int("group_size", kMaxGroupSize);
  if (fit.group_size < 2) {
    o.fail("group_size", "must be at least 2 (a group of one does not communicate), got " +
                             std::to_string(fit.group_size));
  }
  const TierBandwidth t = tier_bandwidth(o, raw);
  fit.alpha_s = t.alpha_s;
  fit.busbw_bytes_per_s = t.busbw_bytes_per_s;
  if (o.has("points")) {
    fit.points = parse_busbw_points(raw.at("points"), o);
    // Past its largest point a curve continues from that point's time at the fit's busbw
    // (collective_time_s), so the point and the fit's line alpha_s + bytes x F / busbw must
    // tell the same story there: a time more than 10x off the line's is a typo or a broken
    // measurement, not a rate (busbw 1 B/s at 16 GiB made a step take 246,000 years).
    // Calibrated fits pass through their large points (calibrate/, least squares on time) and
    // the shipped curves end at their fit's busbw. One exception: a point slower than the line
    // but below its latency knee (bytes x F / busbw under alpha_s) and under a second is a
    // latency measurement of a loaded machine (an 8-byte CPU all-reduce of 14 ms) and stays.
    const BusbwPoint& last = fit.points.back();
    const double factor = bus_bandwidth_factor(fit.collective, fit.group_size);
    const double measured = last.bytes * factor / last.busbw_bytes_per_s;
    const double transfer = last.bytes * factor / fit.busbw_bytes_per_s;
    const double line = fit.alpha_s + transfer;
    constexpr double kMaxDisagreement = 10;
    const bool latency_measurement = transfer < fit.alpha_s && measured < 1.0;
    if (measured < line / kMaxDisagreement ||
        (measured > kMaxDisagreement * line && !latency_measurement)) {
      const std::string at = "[" + std::to_string(fit.points.size() - 1) + "]";
      const auto seconds = [](double value) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g s", value);
        return std::string(text);
      };
      o.fail("points" + at + ".busbw_bytes_per_s",
             describe_json(raw.at("points").back().at("busbw_bytes_per_s")) + " at " +
                 describe_json(whole_bytes(last.bytes)) + " bytes is a " + seconds(measured) + " " +
                 name +
                 ", more than 10x from the fit's own "
                 "line there (alpha_s + bytes x " +
                 describe_json(factor) +
                 " / busbw_bytes_per_s"
                 " = " +
                 seconds(line) +
                 "), which the cost model continues past this "
                 "point; re-measure with meshplan-calibrate, or correct the point or the fit");
    }
  }
  return fit;
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

nlohmann::json peak_or_null(const std::optional<double>& peak) {
  return peak ? nlohmann::json(*peak) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json model_to_json(const ModelSpec& m) {
  nlohmann::json j = {{"schema", "meshplan-model/1"},
                      {"name", m.name},
                      {"description", kWrittenByMeshplan},
                      {"source", kWrittenByMeshplan},
                      {"num_layers", m.num_layers},
                      {"hidden_size", m.hidden_size},
                      {"num_attention_heads", m.num_attention_heads},
                      {"num_kv_heads", m.num_kv_heads},
                      {"head_dim", m.head_dim},
                      {"ffn_hidden_size", m.ffn_hidden_size},
                      {"ffn_type", to_string(m.ffn_type)},
                      {"norm_type", to_string(m.norm_type)},
                      {"vocab_size", m.vocab_size},
                      {"vocab_pad_multiple", m.vocab_pad_multiple},
                      {"position_embedding", to_string(m.position_embedding)},
                      {"max_position_embeddings", m.max_position_embeddings},
                      {"tied_embeddings", m.tied_embeddings},
                      {"linear_bias", m.linear_bias},
                      {"qkv_bias", m.qkv_bias},
                      {"dropout", m.dropout},
                      {"seq_length", m.seq_length}};
  // Written for rope models only: on the others the key must be absent (or null).
  if (m.position_embedding == PositionEmbedding::kRope) j["rope_theta"] = m.rope_theta;
  if (m.rope_scaling) {
    const RopeScaling& r = *m.rope_scaling;
    const auto number_or_null = [](const auto& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    j["rope_scaling"] = {
        {"type", r.type},
        {"factor", number_or_null(r.factor)},
        {"low_freq_factor", number_or_null(r.low_freq_factor)},
        {"high_freq_factor", number_or_null(r.high_freq_factor)},
        {"original_max_position_embeddings", number_or_null(r.original_max_position_embeddings)}};
    // yarn's optional keys, written where given.
    for (const auto& [key, v] :
         {std::pair<const char*, const std::optional<double>*>{"beta_fast", &r.beta_fast},
          {"beta_slow", &r.beta_slow},
          {"mscale", &r.mscale},
          {"mscale_all_dim", &r.mscale_all_dim}}) {
      if (*v) j["rope_scaling"][key] = **v;
    }
    if (r.truncate) j["rope_scaling"]["truncate"] = *r.truncate;
  }
  if (m.norm_epsilon) j["norm_epsilon"] = *m.norm_epsilon;
  if (m.sliding_window) j["sliding_window"] = *m.sliding_window;
  if (m.sliding_window_alternating) j["sliding_window_alternating"] = true;
  if (m.qk_norm) j["qk_norm"] = true;
  if (m.attention_sinks) j["attention_sinks"] = true;
  if (m.mtp_num_layers > 0) j["mtp_num_layers"] = m.mtp_num_layers;
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    j["moe"] = {{"num_experts", e.num_experts},
                {"top_k", e.top_k},
                {"expert_ffn_hidden_size", e.expert_ffn_hidden_size},
                {"num_shared_experts", e.num_shared_experts},
                {"shared_expert_ffn_hidden_size", e.shared_expert_ffn_hidden_size},
                {"first_k_dense_layers", e.first_k_dense_layers},
                {"layer_freq", e.layer_freq},
                {"router_bias", e.router_bias},
                {"expert_bias", e.expert_bias},
                {"shared_expert_gate", e.shared_expert_gate}};
    // The router's optional keys, written where they are not the defaults (softmax, no groups,
    // no scaling).
    if (e.router_score_function != "softmax") {
      j["moe"]["router_score_function"] = e.router_score_function;
    }
    if (e.router_num_groups > 1) {
      j["moe"]["router_num_groups"] = e.router_num_groups;
      j["moe"]["router_group_topk"] = e.router_group_topk;
    }
    if (e.router_topk_scaling_factor != 1) {
      j["moe"]["router_topk_scaling_factor"] = e.router_topk_scaling_factor;
    }
  }
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    j["mla"] = {{"q_lora_rank", a.q_lora_rank},
                {"kv_lora_rank", a.kv_lora_rank},
                {"qk_nope_head_dim", a.qk_nope_head_dim},
                {"qk_rope_head_dim", a.qk_rope_head_dim},
                {"v_head_dim", a.v_head_dim}};
  }
  return j;
}

nlohmann::json peak_flops_to_json(const PeakFlops& p) {
  nlohmann::json j = {{"fp32", peak_or_null(p.fp32)},
                      {"tf32", peak_or_null(p.tf32)},
                      {"bf16", peak_or_null(p.bf16)},
                      {"fp16", peak_or_null(p.fp16)},
                      {"fp8", peak_or_null(p.fp8)}};
  // The block-scaled peaks are optional keys: written where the GPU has them (Blackwell).
  if (p.mxfp8) j["mxfp8"] = *p.mxfp8;
  if (p.nvfp4) j["nvfp4"] = *p.nvfp4;
  return j;
}

nlohmann::json gpu_to_json(const GpuSpec& g) {
  const std::string copied = "copied from preset " + g.name;
  nlohmann::json j = {{"schema", "meshplan-gpu/1"},
                      {"name", g.name},
                      {"description", g.description},
                      {"memory_bytes", whole_bytes(g.memory_bytes)},
                      {"hbm_bandwidth_bytes_per_s", g.hbm_bandwidth_bytes_per_s},
                      {"peak_flops_per_s", peak_flops_to_json(g.peak_flops_per_s)},
                      {"flash_attention", g.flash_attention},
                      {"runtime_overhead",
                       {{"cuda_context_bytes", whole_bytes(g.cuda_context_bytes)},
                        {"allocator_fragmentation_fraction", g.allocator_fragmentation_fraction}}},
                      {"sources",
                       {{"memory_bytes", copied},
                        {"hbm_bandwidth_bytes_per_s", copied},
                        {"peak_flops_per_s", copied},
                        {"runtime_overhead", copied}}}};
  if (g.host_link_bandwidth_bytes_per_s > 0) {
    j["host_link"] = {{"link", g.host_link},
                      {"bandwidth_bytes_per_s", g.host_link_bandwidth_bytes_per_s}};
    j["sources"]["host_link"] = copied;
  }
  return j;
}

nlohmann::json cluster_to_json(const ClusterSpec& c) {
  const std::string copied = "copied from preset " + c.name;
  return {{"schema", "meshplan-cluster/1"},
          {"name", c.name},
          {"description", c.description},
          {"gpu", c.gpu.name},
          {"gpus_per_node", c.gpus_per_node},
          {"nvlink_domain_size", c.nvlink_domain_size},
          {"intra_node",
           {{"link", c.intra_node_link},
            {"bandwidth_bytes_per_s_per_gpu", c.intra_node_bandwidth_bytes_per_s_per_gpu}}},
          {"scale_out",
           {{"fabric", c.scale_out_fabric},
            {"nics_per_node", c.nics_per_node},
            {"nic_bandwidth_bytes_per_s", c.nic_bandwidth_bytes_per_s}}},
          {"sources", {{"intra_node", copied}, {"scale_out", copied}}}};
}

nlohmann::json profile_to_json(const Profile& p) {
  const std::string copied = "copied from profile " + p.name;
  nlohmann::json fits = nlohmann::json::array();
  for (const CollectiveFit& f : p.collectives) {
    nlohmann::json fit = {{"collective", to_string(f.collective)},
                          {"tier", to_string(f.tier)},
                          {"group_size", f.group_size},
                          {"alpha_s", f.alpha_s},
                          {"busbw_bytes_per_s", f.busbw_bytes_per_s}};
    if (!f.points.empty()) {
      nlohmann::json& points = fit["points"] = nlohmann::json::array();
      for (const BusbwPoint& point : f.points) {
        points.push_back(
            {{"bytes", whole_bytes(point.bytes)}, {"busbw_bytes_per_s", point.busbw_bytes_per_s}});
      }
    }
    fits.push_back(std::move(fit));
  }
  nlohmann::json sources = {{"gemm", copied},
                            {"flash_attention_efficiency", copied},
                            {"flash_attention2_efficiency", copied},
                            {"flash_attention_half_keys", copied},
                            {"hbm_efficiency", copied},
                            {"comm_sm_fraction", copied},
                            {"links", copied}};
  if (!p.collectives.empty()) sources["collectives"] = copied;
  nlohmann::json j = {{"schema", kProfileSchema},
                      {"name", p.name},
                      {"description", p.description},
                      {"gpu", p.gpu},
                      {"provenance",
                       {{"kind", p.fitted.families.empty() ? "published" : "fitted"},
                        {"date", "unknown"},
                        {"notes", std::string(kWrittenByMeshplan) + ": copied from profile " +
                                      p.name + "; its provenance and sources are in that file"}}},
                      {"gemm",
                       {{"peak_efficiency", p.gemm.peak_efficiency},
                        {"half_efficiency_flops", p.gemm.half_efficiency_flops},
                        {"k_overhead", p.gemm.k_overhead},
                        {"fp8_peak_efficiency", p.gemm.fp8_peak_efficiency},
                        {"tile_m", p.gemm.tile_m},
                        {"tile_n", p.gemm.tile_n},
                        {"sms", p.gemm.sms}}},
                      {"flash_attention_efficiency", p.flash_attention_efficiency},
                      {"flash_attention2_efficiency", p.flash_attention2_efficiency},
                      {"flash_attention_half_keys", p.flash_attention_half_keys},
                      {"hbm_efficiency", p.hbm_efficiency},
                      {"comm_sm_fraction", p.comm_sm_fraction},
                      {"links",
                       {{"nvlink",
                         {{"alpha_s", p.links.nvlink.alpha_s},
                          {"busbw_bytes_per_s", p.links.nvlink.busbw_bytes_per_s}}},
                        {"nic_busbw_bytes_per_s", p.links.nic_busbw_bytes_per_s},
                        {"scale_out_alpha_s", p.links.scale_out_alpha_s}}},
                      {"collectives", fits},
                      {"sources", sources}};
  if (!p.fitted.families.empty()) j["fitted"] = fitted_to_json(p.fitted);
  return j;
}

namespace {

/// The meshplan-model/1 `rope_scaling` object (configs/README.md): type one of transformers'
/// RoPE types, factor a number > 0 (null only for longrope), and for llama3 the three
/// numbers its blend needs; the others' null.
RopeScaling rope_scaling_from_json(StrictObject o) {
  RopeScaling r;
  r.type = o.choice("type", {"linear", "dynamic", "yarn", "longrope", "llama3"});
  r.factor = o.positive_number_or_null("factor");
  if (!r.factor && r.type != "longrope") {
    o.fail("factor",
           "is null, but rope type " + json_quoted(r.type) + " needs a factor (a number > 0)");
  }
  r.low_freq_factor = o.positive_number_or_null("low_freq_factor");
  r.high_freq_factor = o.positive_number_or_null("high_freq_factor");
  r.original_max_position_embeddings =
      o.int_or_null("original_max_position_embeddings", 1, kMaxTokens);
  const bool llama3 = r.type == "llama3";
  const bool yarn = r.type == "yarn";
  for (const auto& [key, set] :
       {std::pair<const char*, bool>{"low_freq_factor", r.low_freq_factor.has_value()},
        {"high_freq_factor", r.high_freq_factor.has_value()},
        {"original_max_position_embeddings", r.original_max_position_embeddings.has_value()}}) {
    if (llama3 && !set) o.fail(key, "is null, but rope type \"llama3\" needs it");
    const bool original = std::string(key) == "original_max_position_embeddings";
    if (!llama3 && !(yarn && original) && set) {
      o.fail(key, std::string("applies to rope type \"llama3\"") +
                      (original ? " and \"yarn\"" : "") + " only (this one is " +
                      json_quoted(r.type) + "); set it to null");
    }
  }
  // yarn's optional keys (absent or null: transformers' defaults), on yarn only.
  if (o.has("beta_fast")) r.beta_fast = o.positive_number_or_null("beta_fast");
  if (o.has("beta_slow")) r.beta_slow = o.positive_number_or_null("beta_slow");
  if (o.has("mscale")) r.mscale = o.non_negative_number_or_null("mscale");
  if (o.has("mscale_all_dim")) r.mscale_all_dim = o.non_negative_number_or_null("mscale_all_dim");
  if (o.has("truncate")) r.truncate = o.boolean_or_null("truncate");
  for (const auto& [key, set] : {std::pair<const char*, bool>{"beta_fast", r.beta_fast.has_value()},
                                 {"beta_slow", r.beta_slow.has_value()},
                                 {"mscale", r.mscale.has_value()},
                                 {"mscale_all_dim", r.mscale_all_dim.has_value()},
                                 {"truncate", r.truncate.has_value()}}) {
    if (!yarn && set) {
      o.fail(key, "applies to rope type \"yarn\" only (this one is " + json_quoted(r.type) +
                      "); remove it or set it to null");
    }
  }
  if (llama3 && *r.high_freq_factor <= *r.low_freq_factor) {
    o.fail("high_freq_factor", "must be greater than low_freq_factor (" +
                                   describe_json(*r.low_freq_factor) + "), got " +
                                   describe_json(*r.high_freq_factor));
  }
  return r;
}

/// The meshplan-model/1 `moe` object (configs/README.md): every key present.
MoeSpec moe_from_json(StrictObject o) {
  MoeSpec e;
  e.num_experts = o.positive_int("num_experts", kMaxWidth);
  e.top_k = o.positive_int("top_k", kMaxWidth);
  e.expert_ffn_hidden_size = o.positive_int("expert_ffn_hidden_size", kMaxWidth);
  e.num_shared_experts = o.integer("num_shared_experts", 0, kMaxWidth);
  e.shared_expert_ffn_hidden_size = o.integer("shared_expert_ffn_hidden_size", 0, kMaxWidth);
  e.first_k_dense_layers = o.integer("first_k_dense_layers", 0, kMaxLayers);
  e.layer_freq = o.positive_int("layer_freq", kMaxLayers);
  e.router_bias = o.boolean("router_bias");
  e.expert_bias = o.boolean("expert_bias");
  e.shared_expert_gate = o.boolean("shared_expert_gate");
  // Optional, absent or null: a softmax router without groups or scaling.
  if (o.has("router_score_function")) {
    e.router_score_function =
        o.choice_or_null("router_score_function", {"softmax", "sigmoid"}).value_or("softmax");
  }
  // Group-limited routing takes both keys or neither (absent or null): one without the other
  // would leave the reader to invent the missing one.
  std::optional<std::int64_t> groups, group_topk;
  if (o.has("router_num_groups")) groups = o.int_or_null("router_num_groups", 1, kMaxWidth);
  if (o.has("router_group_topk")) group_topk = o.int_or_null("router_group_topk", 1, kMaxWidth);
  if (groups && !group_topk) {
    o.fail("router_group_topk", "is missing (or null) beside router_num_groups " +
                                    std::to_string(*groups) +
                                    "; group-limited routing needs both (DeepSeek-V3: 8 groups, "
                                    "4 kept) or neither");
  }
  if (group_topk && !groups) {
    o.fail("router_num_groups", "is missing (or null) beside router_group_topk " +
                                    std::to_string(*group_topk) +
                                    "; group-limited routing needs both (DeepSeek-V3: 8 groups, "
                                    "4 kept) or neither");
  }
  e.router_num_groups = groups.value_or(1);
  e.router_group_topk = group_topk.value_or(1);
  if (o.has("router_topk_scaling_factor")) {
    e.router_topk_scaling_factor =
        o.positive_number_or_null("router_topk_scaling_factor").value_or(1);
  }
  // The router splits the experts into router_num_groups equal groups and keeps
  // router_group_topk of them (Megatron-Core's group_limited_topk).
  if (e.num_experts % e.router_num_groups != 0) {
    o.fail("router_num_groups", "is " + std::to_string(e.router_num_groups) +
                                    ", which does not divide num_experts (" +
                                    std::to_string(e.num_experts) + "); give a divisor");
  }
  if (e.router_group_topk > e.router_num_groups) {
    o.fail("router_group_topk", "is " + std::to_string(e.router_group_topk) +
                                    ", more than router_num_groups (" +
                                    std::to_string(e.router_num_groups) + "); give at most that");
  }
  // The kept groups must hold top_k experts: Megatron-Core's group_limited_topk scores each
  // group by its best top_k / group_topk experts and then picks top_k among the kept groups'.
  const std::int64_t reachable = e.router_group_topk * (e.num_experts / e.router_num_groups);
  if (reachable < e.top_k) {
    o.fail("router_group_topk",
           "is " + std::to_string(e.router_group_topk) + ": the kept groups of " +
               counted(e.num_experts / e.router_num_groups, "expert") + " hold " +
               counted(reachable, "expert") + ", fewer than top_k (" + std::to_string(e.top_k) +
               "), which the router picks among them (Megatron-Core's group_limited_topk); keep "
               "more groups or make fewer, larger ones");
  }
  return e;
}

/// The meshplan-model/1 `mla` object (configs/README.md): every key present.
MlaSpec mla_from_json(StrictObject o) {
  MlaSpec a;
  a.q_lora_rank = o.integer("q_lora_rank", 0, kMaxWidth);
  a.kv_lora_rank = o.positive_int("kv_lora_rank", kMaxWidth);
  a.qk_nope_head_dim = o.positive_int("qk_nope_head_dim", kMaxWidth);
  a.qk_rope_head_dim = o.positive_int("qk_rope_head_dim", kMaxWidth);
  a.v_head_dim = o.positive_int("v_head_dim", kMaxWidth);
  return a;
}

}  // namespace

ModelSpec model_from_json(const nlohmann::json& json, const std::string& file,
                          const std::string& path) {
  StrictObject o = open_schema(json, file, path, "meshplan-model/1",
                               {"name",
                                "description",
                                "source",
                                "num_layers",
                                "hidden_size",
                                "num_attention_heads",
                                "num_kv_heads",
                                "head_dim",
                                "ffn_hidden_size",
                                "ffn_type",
                                "norm_type",
                                "vocab_size",
                                "vocab_pad_multiple",
                                "position_embedding",
                                "max_position_embeddings",
                                "tied_embeddings",
                                "linear_bias",
                                "qkv_bias",
                                "dropout",
                                "seq_length",
                                "rope_theta",
                                "rope_scaling",
                                "norm_epsilon",
                                "sliding_window",
                                "sliding_window_alternating",
                                "qk_norm",
                                "attention_sinks",
                                "mtp_num_layers",
                                "moe",
                                "mla"});
  ModelSpec m;
  m.name = o.text("name", "the model's name (a preset's is its file name)");
  o.string("description");
  o.string("source");
  m.num_layers = o.positive_int("num_layers", kMaxLayers);
  m.hidden_size = o.positive_int("hidden_size", kMaxWidth);
  m.num_attention_heads = o.positive_int("num_attention_heads", kMaxWidth);
  m.num_kv_heads = o.positive_int("num_kv_heads", kMaxWidth);
  m.head_dim = o.positive_int("head_dim", kMaxWidth);
  m.ffn_hidden_size = o.positive_int("ffn_hidden_size", kMaxWidth);
  m.ffn_type =
      o.choice("ffn_type", {"gelu", "swiglu"}) == "gelu" ? FfnType::kGelu : FfnType::kSwiglu;
  m.norm_type = o.choice("norm_type", {"layernorm", "rmsnorm"}) == "layernorm"
                    ? NormType::kLayerNorm
                    : NormType::kRmsNorm;
  m.vocab_size = o.positive_int("vocab_size", kMaxTokens);
  m.vocab_pad_multiple = o.positive_int("vocab_pad_multiple", kMaxTokens);
  const std::string position = o.choice("position_embedding", {"learned", "rope", "alibi"});
  m.position_embedding = position == "learned" ? PositionEmbedding::kLearned
                         : position == "rope"  ? PositionEmbedding::kRope
                                               : PositionEmbedding::kAlibi;
  m.max_position_embeddings = o.positive_int("max_position_embeddings", kMaxTokens);
  // Optional (configs/README.md): absent or null on a rope model is RoFormer's base, 10000
  // (ModelSpec::rope_theta's default); on a learned or ALiBi model it has no meaning.
  if (o.has("rope_theta") && !json.at("rope_theta").is_null()) {
    const nlohmann::json& theta = json.at("rope_theta");
    if (m.position_embedding != PositionEmbedding::kRope) {
      o.fail("rope_theta", "is " + describe_json(theta) +
                               ", but a RoPE base applies only to position_embedding \"rope\" "
                               "(this model's is " +
                               json_quoted(position) + "); remove the key or set it to null");
    }
    if (!theta.is_number() || !(theta.get<double>() > 1)) {
      o.fail("rope_theta",
             "must be a number > 1 (the RoPE base: 10000 for RoFormer and Llama 2, "
             "500000 for Llama 3), got " +
                 describe_json(theta));
    }
    m.rope_theta = theta.get<double>();
  }
  if (o.has("rope_scaling") && !json.at("rope_scaling").is_null()) {
    if (m.position_embedding != PositionEmbedding::kRope) {
      o.fail("rope_scaling",
             "is set, but RoPE scaling applies only to position_embedding "
             "\"rope\" (this model's is " +
                 json_quoted(position) + "); remove the key or set it to null");
    }
    m.rope_scaling = rope_scaling_from_json(
        o.object("rope_scaling", {"type", "factor", "low_freq_factor", "high_freq_factor",
                                  "original_max_position_embeddings", "beta_fast", "beta_slow",
                                  "mscale", "mscale_all_dim", "truncate"}));
  }
  if (o.has("norm_epsilon") && !json.at("norm_epsilon").is_null()) {
    const nlohmann::json& eps = json.at("norm_epsilon");
    if (!eps.is_number() || !norm_epsilon_in_range(eps.get<double>())) {
      o.fail("norm_epsilon", std::string(kNormEpsilonExpected) + ", got " + describe_json(eps));
    }
    m.norm_epsilon = eps.get<double>();
  }
  m.tied_embeddings = o.boolean("tied_embeddings");
  m.linear_bias = o.boolean("linear_bias");
  m.qkv_bias = o.boolean("qkv_bias");
  m.dropout = o.boolean("dropout");
  m.seq_length = o.positive_int("seq_length", kMaxTokens);
  if (o.has("sliding_window") && !json.at("sliding_window").is_null()) {
    m.sliding_window = o.positive_int("sliding_window", kMaxTokens);
  }
  // Optional, absent or null: off / none (configs/README.md).
  for (const auto& [key, flag] :
       {std::pair<const char*, bool*>{"sliding_window_alternating", &m.sliding_window_alternating},
        {"qk_norm", &m.qk_norm},
        {"attention_sinks", &m.attention_sinks}}) {
    if (o.has(key)) *flag = o.boolean_or_null(key).value_or(false);
  }
  if (m.sliding_window_alternating && !m.sliding_window) {
    o.fail("sliding_window_alternating",
           "is true without a sliding_window; give the window "
           "or set it to false");
  }
  if (o.has("mtp_num_layers")) {
    m.mtp_num_layers = o.int_or_null("mtp_num_layers", 0, kMaxLayers).value_or(0);
  }
  if (o.has("moe") && !json.at("moe").is_null()) {
    m.moe = moe_from_json(o.object(
        "moe", {"num_experts", "top_k", "expert_ffn_hidden_size", "num_shared_experts",
                "shared_expert_ffn_hidden_size", "first_k_dense_layers", "layer_freq",
                "router_bias", "expert_bias", "shared_expert_gate", "router_score_function",
                "router_num_groups", "router_group_topk", "router_topk_scaling_factor"}));
  }
  if (o.has("mla") && !json.at("mla").is_null()) {
    m.mla = mla_from_json(o.object("mla", {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                           "qk_rope_head_dim", "v_head_dim"}));
  }
  if (m.num_attention_heads * m.head_dim > kMaxWidth) {
    o.fail("head_dim",
           "num_attention_heads x head_dim must be at most " + std::to_string(kMaxWidth));
  }
  // The structure every model source is checked against (costmodel/model_spec.hpp); the keys
  // of meshplan-model/1 are the names model_structure_problem uses. head_dim is a key here.
  if (const auto problem = model_structure_problem(m, HeadDimSource::kStated)) {
    o.fail(to_string(problem->field), problem->message);
  }
  if (const auto problem = model_extension_problem(m)) o.fail(problem->key, problem->message);
  // Learned positions are a table of max_position_embeddings rows: the model's own sequence
  // cannot be longer (GPT-2's wpe, Megatron's LanguageModelEmbedding). Refused here, naming
  // both keys, before any layout is tried (the search would reject every one of them).
  if (m.position_embedding == PositionEmbedding::kLearned &&
      m.seq_length > m.max_position_embeddings) {
    o.fail("seq_length", "is " + std::to_string(m.seq_length) + ", but " + o.path() +
                             ".max_position_embeddings is " +
                             std::to_string(m.max_position_embeddings) +
                             " and learned positions (position_embedding \"learned\") have "
                             "no row beyond it; expected a seq_length of at most " +
                             std::to_string(m.max_position_embeddings) + ", or more positions");
  }
  return m;
}

GpuSpec gpu_from_json(const nlohmann::json& json, const std::string& file,
                      const std::string& path) {
  StrictObject o = open_schema(
      json, file, path, "meshplan-gpu/1",
      {"name", "description", "memory_bytes", "hbm_bandwidth_bytes_per_s", "peak_flops_per_s",
       "flash_attention", "runtime_overhead", "host_link", "sources"});
  GpuSpec g;
  g.name = o.text("name", "the GPU's name (a preset's is its file name)");
  g.description = o.string("description");
  g.memory_bytes = whole_bytes_in(o, json, "memory_bytes", kMinGpuMemoryBytes, kMaxGpuMemoryBytes,
                                  "a whole number of bytes from 1048576 (2^20) to "
                                  "1125899906842624 (2^50), as nvidia-smi's total MiB x 2^20");
  g.hbm_bandwidth_bytes_per_s =
      bounded(o, json, "hbm_bandwidth_bytes_per_s", kMinHbmBytesPerS, true, kMaxHbmBytesPerS,
              "a number of bytes/s from 1e9 to 1e15 (the datasheet's HBM bandwidth)");
  StrictObject peaks =
      o.object("peak_flops_per_s", {"fp32", "tf32", "bf16", "fp16", "fp8", "mxfp8", "nvfp4"});
  const nlohmann::json& raw_peaks = json.at("peak_flops_per_s");
  g.peak_flops_per_s.fp32 = peak_flops_or_null(peaks, raw_peaks, "fp32");
  g.peak_flops_per_s.tf32 = peak_flops_or_null(peaks, raw_peaks, "tf32");
  g.peak_flops_per_s.bf16 = peak_flops_or_null(peaks, raw_peaks, "bf16");
  g.peak_flops_per_s.fp16 = peak_flops_or_null(peaks, raw_peaks, "fp16");
  g.peak_flops_per_s.fp8 = peak_flops_or_null(peaks, raw_peaks, "fp8");
  // Optional (configs/README.md): absent is null, a GPU without block-scaled tensor cores.
  for (const auto& [key, peak] : {std::pair{"mxfp8", &g.peak_flops_per_s.mxfp8},
                                  std::pair{"nvfp4", &g.peak_flops_per_s.nvfp4}}) {
    if (raw_peaks.contains(key)) *peak = peak_flops_or_null(peaks, raw_peaks, key);
  }
  // Every training precision runs on 16-bit tensor cores (fp8 its non-GEMM kernels, and MFU
  // is measured against the 16-bit peak): a GPU without one could train nothing, and would be
  // refused later as "--precision fp16: ...", blaming a flag never given.
  if (!g.peak_flops_per_s.bf16 && !g.peak_flops_per_s.fp16) {
    o.fail("peak_flops_per_s",
           "has neither a bf16 nor an fp16 peak; at least one 16-bit peak is needed (every "
           "training precision, fp8 included, runs on 16-bit tensor cores and MFU is measured "
           "against the 16-bit peak): give the datasheet's dense bf16 or fp16 FLOP/s");
  }
  g.flash_attention = o.boolean("flash_attention");
  StrictObject overhead =
      o.object("runtime_overhead", {"cuda_context_bytes", "allocator_fragmentation_fraction"});
  g.cuda_context_bytes = whole_bytes_in(overhead, json.at("runtime_overhead"), "cuda_context_bytes",
                                        0, kMaxCudaContextBytes,
                                        "a whole number of bytes from 0 to 1099511627776 (2^40)");
  g.allocator_fragmentation_fraction = overhead.fraction("allocator_fragmentation_fraction");
  // Optional (configs/README.md): absent is unknown, and CPU offloading is then refused.
  if (o.has("host_link")) {
    StrictObject link = o.object("host_link", {"link", "bandwidth_bytes_per_s"});
    g.host_link = link.string("link");
    g.host_link_bandwidth_bytes_per_s =
        bounded(link, json.at("host_link"), "bandwidth_bytes_per_s", 1e8, true, 1e13,
                "a number of bytes/s from 1e8 to 1e13 (one direction, GPU to host memory)");
  }
  std::vector<std::string> sourced = {"memory_bytes", "hbm_bandwidth_bytes_per_s",
                                      "peak_flops_per_s", "runtime_overhead"};
  if (o.has("host_link")) sourced.emplace_back("host_link");
  require_sources(o, sourced);
  return g;
}

ClusterSpec cluster_from_json(const nlohmann::json& json, const std::string& file,
                              const std::string& path, const GpuSpec& gpu) {
  return parse_cluster(json, file, path, [&gpu](StrictObject& o, const std::string& name) {
    if (name != gpu.name) {
      o.fail("gpu", "is " + json_quoted(name) + "; expected " + json_quoted(gpu.name) +
                        ", the name of the GPU given with the cluster");
    }
    return gpu;
  });
}

ClusterSpec cluster_from_json(const nlohmann::json& json, const std::string& file,
                              const std::string& path) {
  return parse_cluster(json, file, path, [&file](StrictObject& o, const std::string& name) {
    try {
      return load_gpu(referred_name_or_path(name, file));  // a relative path: beside `file`
    } catch (const InputError& e) {
      o.fail("gpu", std::string("cannot be loaded: ") + e.what());
    }
  });
}

Profile profile_from_json(const nlohmann::json& json, const std::string& file,
                          const std::string& path, const std::optional<std::string>& known_gpu) {
  StrictObject o =
      open_schema(json, file, path, kProfileSchema,
                  {"name", "description", "gpu", "provenance", "gemm", "flash_attention_efficiency",
                   "flash_attention2_efficiency", "flash_attention_half_keys", "hbm_efficiency",
                   "comm_sm_fraction", "links", "collectives", "sources", "fitted"});
  Profile p;
  p.name = o.text("name", "the profile's name (a preset's is its file name)");
  // The description, date and notes are printed (profile show, plan's footer): one line each.
  p.description = o.line("description", "the profile's description");
  p.gpu = o.string("gpu");
  if (p.gpu != known_gpu) {
    try {
      // A relative path from `file`'s folder; kept as the GPU's name, so that the profile (and
      // a plan that carries it) says which GPU, not where a file was.
      p.gpu = load_gpu(referred_name_or_path(p.gpu, file)).name;
    } catch (const InputError& e) {
      o.fail("gpu", std::string("cannot be loaded: ") + e.what());
    }
  }

  StrictObject provenance = o.object("provenance", {"kind", "date", "notes"});
  const std::string kind = provenance.choice("kind", {"published", "measured", "fitted"});
  // A fitted section's parameters scale the rates (meshplan fit marks the profile so): a
  // profile that holds one is not the published or measured rates alone.
  const bool has_fitted = json.contains("fitted") && !json.at("fitted").is_null();
  if (!has_fitted && kind == "fitted") {
    provenance.fail("kind",
                    "is \"fitted\", but the profile has no fitted section ($.fitted), "
                    "which meshplan fit writes beside it; give the kind of its rates "
                    "(\"published\" or \"measured\")");
  }
  // Published rates with fitted parameters scaling them are no longer the publications' alone
  // (meshplan fit marks its output "fitted"; meshplan-calibrate's "measured" keeps its base
  // profile's fitted section, which scales the measured rates).
  if (has_fitted && kind == "published") {
    provenance.fail("kind",
                    "is \"published\", but the profile has a fitted section ($.fitted), "
                    "whose parameters scale its rates; meshplan fit writes kind "
                    "\"fitted\" with it (or remove the fitted section)");
  }
  provenance.line("date", "the date of the profile's numbers");
  provenance.line("notes", "where the profile's numbers come from");

  StrictObject gemm = o.object("gemm", {"peak_efficiency", "half_efficiency_flops", "k_overhead",
                                        "fp8_peak_efficiency", "tile_m", "tile_n", "sms"});
  p.gemm.peak_efficiency = efficiency(gemm, json.at("gemm"), "peak_efficiency");
  p.gemm.half_efficiency_flops = bounded(gemm, json.at("gemm"), "half_efficiency_flops", 0, false,
                                         1e18, "a number of FLOP in (0, 1e18]");
  p.gemm.k_overhead = bounded(gemm, json.at("gemm"), "k_overhead", 0, true, 1e6,
                              "a number of elements of k in [0, 1e6]");
  p.gemm.fp8_peak_efficiency = efficiency(gemm, json.at("gemm"), "fp8_peak_efficiency");
  p.gemm.tile_m = gemm.positive_int("tile_m", kMaxTile);
  p.gemm.tile_n = gemm.positive_int("tile_n", kMaxTile);
  p.gemm.sms = gemm.positive_int("sms", kMaxSms);

  p.flash_attention_efficiency = efficiency(o, json, "flash_attention_efficiency");
  p.flash_attention2_efficiency = efficiency(o, json, "flash_attention2_efficiency");
  if (!json.contains("flash_attention_half_keys")) {
    // Added on 2026-11-30: profiles written before (calibrated ones included) lack it.
    o.fail("flash_attention_half_keys",
           "missing; expected the keys per kernel call at which FlashAttention runs at half its "
           "rate (profiles written before 2026-11-30 lack it: add 300 for a GPU's FlashAttention "
           "kernels, as the shipped profiles have, or 0 for a CPU profile, with its source under "
           "\"sources\", or run meshplan-calibrate again)");
  }
  p.flash_attention_half_keys =
      bounded(o, json, "flash_attention_half_keys", 0, true, 1e6,
              "a number of keys per kernel call in [0, 1e6] (0: no ramp)");
  p.hbm_efficiency = efficiency(o, json, "hbm_efficiency");
  p.comm_sm_fraction = efficiency(o, json, "comm_sm_fraction");

  StrictObject links = o.object("links", {"nvlink", "nic_busbw_bytes_per_s", "scale_out_alpha_s"});
  const nlohmann::json& raw_links = json.at("links");
  StrictObject nvlink = links.object("nvlink", {"alpha_s", "busbw_bytes_per_s"});
  p.links.nvlink = tier_bandwidth(nvlink, raw_links.at("nvlink"));
  p.links.nic_busbw_bytes_per_s = bus_bandwidth(links, raw_links, "nic_busbw_bytes_per_s");
  p.links.scale_out_alpha_s = latency(links, raw_links, "scale_out_alpha_s");

  if (!json.contains("collectives"))
    o.fail("collectives", "missing; expected an array (may be empty)");
  const nlohmann::json& fits = json.at("collectives");
  if (!fits.is_array()) {
    o.fail("collectives", "must be an array of fits (may be empty), got " + describe_json(fits));
  }
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const std::string fit_path = path + ".collectives[" + std::to_string(i) + "]";
    const CollectiveFit fit = parse_fit(fits.at(i), file, fit_path);
    for (std::size_t j = 0; j < p.collectives.size(); ++j) {
      const CollectiveFit& other = p.collectives[j];
      if (other.collective == fit.collective && other.tier == fit.tier &&
          other.group_size == fit.group_size) {
        throw InputError(file + ": " + fit_path + ": repeats the fit of " + path + ".collectives[" +
                         std::to_string(j) + "] (" + to_string(fit.collective) + ", " +
                         to_string(fit.tier) + ", group_size " + std::to_string(fit.group_size) +
                         "); keep one fit per collective, tier and group size");
      }
    }
    p.collectives.push_back(fit);
  }

  // configs/README.md: each number with its source; the collectives' source where there are any.
  std::vector<std::string> numbers = {"gemm",
                                      "flash_attention_efficiency",
                                      "flash_attention2_efficiency",
                                      "flash_attention_half_keys",
                                      "hbm_efficiency",
                                      "comm_sm_fraction",
                                      "links"};
  if (p.collectives.empty()) {
    require_sources(o, numbers, {"collectives"});
  } else {
    numbers.push_back("collectives");
    require_sources(o, numbers);
  }
  // Optional: what `meshplan fit` found (planner/fit/fitted_json.hpp).
  if (json.contains("fitted")) p.fitted = fitted_from_json(o, json.at("fitted"), p.gpu);
  return p;
}

}  // namespace meshplan
