#include "planner/config/profile_loader.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "planner/config/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"

namespace meshplan {

namespace {

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

/// An efficiency: a fraction of a peak, in (0, 1] (1 allowed: a perfect rate is not an error,
/// 0 would make every time infinite).
double efficiency(StrictObject& o, const nlohmann::json& raw, const std::string& key) {
  const char* expected = "a number in (0, 1]";
  const double d = number(o, raw, key, expected);
  if (!(d > 0 && d <= 1)) {
    o.fail(key, std::string("must be ") + expected + ", got " + describe_json(raw.at(key)));
  }
  return d;
}

/// A latency in seconds: >= 0 and finite.
double non_negative(StrictObject& o, const nlohmann::json& raw, const std::string& key) {
  const char* expected = "a number >= 0";
  const double d = number(o, raw, key, expected);
  if (!(d >= 0) || !std::isfinite(d)) {
    o.fail(key, std::string("must be ") + expected + ", got " + describe_json(raw.at(key)));
  }
  return d;
}

/// {"alpha_s": >= 0, "busbw_bytes_per_s": > 0} as read in `o` (whose object is `raw`).
TierBandwidth tier_bandwidth(StrictObject& o, const nlohmann::json& raw) {
  TierBandwidth t;
  t.alpha_s = non_negative(o, raw, "alpha_s");
  t.busbw_bytes_per_s = o.positive_number("busbw_bytes_per_s");
  return t;
}

/// The profile's "schema" first, so that a file of another kind (a GPU or cluster file) is
/// named as such rather than as a list of unknown keys (as loaders.cpp does for its kinds).
StrictObject open_profile(const nlohmann::json& json, const std::string& file) {
  if (json.is_object() && json.contains("schema") && json.at("schema") != kProfileSchema) {
    throw InputError(file + ": $.schema: is " + describe_json(json.at("schema")) + "; expected \"" +
                     kProfileSchema + "\" (is this the right kind of file?)");
  }
  StrictObject o(
      json, file, "$",
      {"schema", "name", "description", "gpu", "provenance", "gemm", "flash_attention_efficiency",
       "hbm_efficiency", "links", "collectives", "sources"});
  o.string("schema");
  return o;
}

CollectiveFit parse_fit(const nlohmann::json& raw, const std::string& file,
                        const std::string& path) {
  StrictObject o(raw, file, path,
                 {"collective", "tier", "group_size", "alpha_s", "busbw_bytes_per_s"});
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
  return fit;
}

Profile parse_profile(const nlohmann::json& json, const std::string& file) {
  StrictObject o = open_profile(json, file);
  Profile p;
  p.name = o.string("name");
  p.description = o.string("description");
  p.gpu = o.string("gpu");
  try {
    load_gpu(p.gpu);
  } catch (const InputError& e) {
    o.fail("gpu", std::string("cannot be loaded: ") + e.what());
  }

  StrictObject provenance = o.object("provenance", {"kind", "date", "notes"});
  provenance.choice("kind", {"published", "measured"});
  provenance.string("date");
  provenance.string("notes");

  StrictObject gemm =
      o.object("gemm", {"peak_efficiency", "half_efficiency_flops", "tile_m", "tile_n", "sms"});
  p.gemm.peak_efficiency = efficiency(gemm, json.at("gemm"), "peak_efficiency");
  p.gemm.half_efficiency_flops = gemm.positive_number("half_efficiency_flops");
  p.gemm.tile_m = gemm.positive_int("tile_m", kMaxTile);
  p.gemm.tile_n = gemm.positive_int("tile_n", kMaxTile);
  p.gemm.sms = gemm.positive_int("sms", kMaxSms);

  p.flash_attention_efficiency = efficiency(o, json, "flash_attention_efficiency");
  p.hbm_efficiency = efficiency(o, json, "hbm_efficiency");

  StrictObject links = o.object("links", {"nvlink", "nic_busbw_bytes_per_s", "scale_out_alpha_s"});
  const nlohmann::json& raw_links = json.at("links");
  StrictObject nvlink = links.object("nvlink", {"alpha_s", "busbw_bytes_per_s"});
  p.links.nvlink = tier_bandwidth(nvlink, raw_links.at("nvlink"));
  p.links.nic_busbw_bytes_per_s = links.positive_number("nic_busbw_bytes_per_s");
  p.links.scale_out_alpha_s = non_negative(links, raw_links, "scale_out_alpha_s");

  if (!json.contains("collectives"))
    o.fail("collectives", "missing; expected an array (may be empty)");
  const nlohmann::json& fits = json.at("collectives");
  if (!fits.is_array()) {
    o.fail("collectives", "must be an array of fits (may be empty), got " + describe_json(fits));
  }
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const std::string path = "$.collectives[" + std::to_string(i) + "]";
    const CollectiveFit fit = parse_fit(fits.at(i), file, path);
    for (std::size_t j = 0; j < p.collectives.size(); ++j) {
      const CollectiveFit& other = p.collectives[j];
      if (other.collective == fit.collective && other.tier == fit.tier &&
          other.group_size == fit.group_size) {
        throw InputError(file + ": " + path + ": repeats the fit of $.collectives[" +
                         std::to_string(j) + "] (" + to_string(fit.collective) + ", " +
                         to_string(fit.tier) + ", group_size " + std::to_string(fit.group_size) +
                         "); keep one fit per collective, tier and group size");
      }
    }
    p.collectives.push_back(fit);
  }

  // configs/README.md: each number with its source.
  const std::vector<std::string> numbers = {"gemm", "flash_attention_efficiency", "hbm_efficiency",
                                            "links"};
  StrictObject sources = o.object("sources", numbers);
  for (const std::string& key : numbers) {
    if (sources.string(key).empty())
      sources.fail(key, "is empty; expected where the number comes from");
  }
  return p;
}

}  // namespace

Profile load_profile(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kProfile, name_or_path);
  Profile p = parse_profile(load_json_file(file), file);
  // A preset found by name must be named after its file (the check of loaders.cpp).
  if (file != name_or_path && p.name != name_or_path) {
    throw InputError(file + ": $.name: is \"" + p.name +
                     "\"; a preset's name must equal its file name \"" + name_or_path + "\"");
  }
  return p;
}

}  // namespace meshplan
