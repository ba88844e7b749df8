#include "planner/cli/options.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "planner/config/closest_names.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/report/atomic_write.hpp"

namespace meshplan {

namespace {

/// Numbers are decimal: "010" (octal to C) and "0x8" (hex) are refused rather than reread.
bool plain_decimal(const std::string& text) {
  if (text.find_first_of("xX") != std::string::npos) return false;
  std::size_t i = (text[0] == '+' || text[0] == '-') ? 1 : 0;
  return !(text.size() > i + 1 && text[i] == '0' && std::isdigit(static_cast<unsigned char>(text[i + 1])));
}

}  // namespace

CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end == text.c_str() || *end != '\0' || !plain_decimal(text) ||
            !std::isfinite(value) || value < min || value > max) {
          return "must be a number from " + CLI::detail::to_string(min) + " to " +
                 CLI::detail::to_string(max) + ", got \"" + text + "\"";
        }
        return std::string();
      },
      "NUMBER");
}

CLI::Validator positive_up_to(double max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        if (text.empty() || !plain_decimal(text)) {
          return "must be a decimal number, got \"" + text + "\"";
        }
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || !(value > 0) ||
            value > max) {
          char bound[32];
          std::snprintf(bound, sizeof bound, "%g", max);
          return "must be a number > 0 and at most " + std::string(bound) + ", got \"" + text +
                 "\"";
        }
        return std::string();
      },
      "POSITIVE");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty path is never a valid output file; give a file name"
                            : std::string();
      },
      "FILE");
}

void check_output_flag(const std::string& flag, const std::string& path) {
  try {
    check_writable_target(path);
  } catch (const InputError& e) {
    throw InputError(flag + " " + e.what());
  }
}

namespace {

/// Integer flags: 1 .. 2^24 keeps every product of degrees and sizes inside int64.
CLI::Validator whole_up_to(std::int64_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        if (text.empty() || !plain_decimal(text)) {
          return "must be a decimal whole number, got \"" + text + "\"";
        }
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || value < 1 || value > max) {
          return "must be a whole number from 1 to " + std::to_string(max) + ", got \"" + text +
                 "\"";
        }
        return std::string();
      },
      "INT");
}


}  // namespace

void add_framework_option(CLI::App& cmd, std::string& framework) {
  std::string help = "Framework convention for bytes per parameter and sharding:";
  for (const FrameworkConvention& f : framework_conventions()) {
    help += "\n  " + f.name + ": " + f.description + " (" +
            std::to_string(static_cast<int>(f.bytes_per_param())) + " bytes/param)";
  }
  cmd.add_option("--framework", framework, help)
      ->capture_default_str()
      ->check(CLI::IsMember(framework_names()));
}

void add_precision_option(CLI::App& cmd, std::string& precision) {
  cmd.add_option("--precision", precision,
                 "Training precision: bf16 | fp16 | fp8 (FP8 GEMMs, bf16 elsewhere) (default: "
                 "bf16, fp16 on GPUs without bf16 such as the V100)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
}

void add_mfu_option(CLI::App& cmd, double& mfu) {
  cmd.add_option("--mfu", mfu,
                 "Model FLOPs utilization for the time to train, a fraction in (0, 1]")
      ->capture_default_str()
      ->check(positive_up_to(1.0));
}

FrameworkConvention require_framework(const std::string& name) {
  if (auto f = find_framework(name)) return *f;
  throw InputError("--framework: unknown convention \"" + name + "\"; expected one of " +
                   quoted_list(framework_names()));
}

Precision require_precision(const std::string& name, const GpuSpec& gpu,
                            std::vector<std::string>& notes) {
  if (name.empty()) {
    const bool bf16 = gpu.peak_flops_per_s.bf16.has_value();
    notes.push_back(std::string("precision ") + (bf16 ? "bf16" : "fp16") + " (default" +
                    (bf16 ? "" : ": " + gpu.name + " has no bf16 tensor cores") +
                    "; set --precision)");
    return bf16 ? Precision::kBf16 : Precision::kFp16;
  }
  if (auto p = parse_precision(name)) return *p;
  throw InputError("--precision: unknown precision \"" + name +
                   "\"; expected one of \"bf16\", \"fp16\", \"fp8\"");
}

double require_mfu_peak_flops(const GpuSpec& gpu, Precision precision) {
  if (const auto problem = precision_problem(gpu, precision)) {
    throw InputError("--precision " + std::string(to_string(precision)) + ": " + gpu.name +
                     " " + *problem + "; choose another --precision (meshplan presets gpus "
                     "lists each GPU's peaks)");
  }
  return *training_peak_flops(gpu, half_precision(precision));
}

void add_layout_options(CLI::App& cmd, LayoutFlags& f) {
  const CLI::Validator positive = whole_up_to(kMaxDegree);
  cmd.add_option("--dp", f.dp, "Data-parallel degree [GPUs] (default: --gpus / (tp x pp x cp), or 1)")
      ->check(positive);
  cmd.add_option("--tp", f.tp, "Tensor-parallel degree [GPUs]")->capture_default_str()->check(positive);
  cmd.add_option("--pp", f.pp, "Pipeline-parallel degree [stages]")->capture_default_str()->check(positive);
  cmd.add_option("--cp", f.cp, "Context-parallel degree [GPUs]")->capture_default_str()->check(positive);
  cmd.add_option("--vpp", f.vpp, "Virtual pipeline stages (model chunks) per rank; > 1 is the interleaved 1F1B schedule")
      ->capture_default_str()->check(positive);
  cmd.add_option("--mbs", f.mbs, "Micro-batch size [sequences]")->capture_default_str()->check(positive);
  cmd.add_option("--gbs", f.gbs, "Global batch [sequences] (default: dp x mbs x pp x vpp, enough micro-batches to fill the pipeline)")
      ->check(whole_up_to(kMaxGbs));
  cmd.add_option("--seq", f.seq, "Sequence length [tokens] (default: the model's seq_length)")->check(positive);
  cmd.add_option("--zero", f.zero, "ZeRO stage: 0 none, 1 optimizer states (Megatron distributed optimizer), 2 + gradients, 3 + parameters (FSDP)")
      ->capture_default_str()->check(CLI::Range(0, 3));
  cmd.add_option("--recompute", f.recompute, "Activation recompute: none | selective (attention core) | full (layer input only)")
      ->capture_default_str()->check(CLI::IsMember({"none", "selective", "full"}));
  cmd.add_flag("--sp", f.sp, "Sequence parallelism (Megatron; needs tp > 1)");
  cmd.add_option("--attention", f.attention, "Attention kernel: flash | eager (default: flash where the GPU has FlashAttention kernels, else eager)")
      ->check(CLI::IsMember({"flash", "eager"}));
  cmd.add_option("--stage-layers", f.stage_layers, "Layers per pipeline stage, comma-separated, e.g. 1,2,2,3 (default: even)")
      ->delimiter(',')->check(positive);
}

ResolvedLayout resolve_layout(const LayoutFlags& f, const ModelSpec& model, const GpuSpec& gpu,
                              const FrameworkConvention& framework, Precision precision,
                              std::optional<std::int64_t> gpus) {
  ResolvedLayout r;
  Layout& l = r.layout;
  if (f.dp > 0) {
    l.dp = f.dp;
  } else if (gpus && *gpus % (f.tp * f.pp * f.cp) == 0) {
    l.dp = *gpus / (f.tp * f.pp * f.cp);
    if (l.dp > 1) {
      r.notes.push_back("dp " + std::to_string(l.dp) + " (default: --gpus " +
                        std::to_string(*gpus) + " / (tp x pp x cp); set --dp)");
    }
  } else {
    l.dp = 1;
  }
  l.tp = f.tp;
  l.pp = f.pp;
  l.cp = f.cp;
  l.vpp = f.vpp;
  l.mbs = f.mbs;
  l.zero = f.zero;
  l.sp = f.sp;
  l.stage_layers = f.stage_layers;
  l.recompute = *parse_recompute(f.recompute);
  if (f.gbs > 0) {
    l.gbs = f.gbs;
  } else {
    l.gbs = l.dp * f.mbs * f.pp * f.vpp;
    r.notes.push_back("gbs " + std::to_string(l.gbs) +
                      " (default: dp x mbs x pp x vpp, enough micro-batches to fill the pipeline; "
                      "memory is the same for any larger gbs; set --gbs)");
  }
  if (!framework.allows_zero(f.zero)) {
    std::string offered;
    for (int z = 0; z <= 3; ++z) {
      if (framework.allows_zero(z)) offered += (offered.empty() ? "" : ", ") + std::to_string(z);
    }
    throw InputError("--zero " + std::to_string(f.zero) + ": framework " + framework.name +
                     " offers ZeRO stages " + offered + " (choose one, or another --framework)");
  }
  if (framework.name == "fsdp" && f.zero < 3) {
    r.notes.push_back("framework fsdp with --zero " + std::to_string(f.zero) +
                      ": nothing is fully sharded; FSDP's full shard is --zero 3");
  }
  r.setup.framework = framework;
  r.setup.precision = precision;
  r.setup.seq = f.seq > 0 ? f.seq : model.seq_length;
  if (f.seq <= 0) {
    r.notes.push_back("seq " + std::to_string(r.setup.seq) +
                      " (default: the model's seq_length, max_position_embeddings for a Hugging "
                      "Face config; set --seq)");
  }
  if (!f.attention.empty()) {
    r.setup.attention = *parse_attention(f.attention);
    if (r.setup.attention == AttentionImpl::kFlash && !gpu.flash_attention) {
      r.notes.push_back(gpu.name + " has no FlashAttention-2 kernels; --attention flash stands for a "
                        "memory-efficient kernel (xformers) that saves no s x s tensors either");
    }
  } else {
    r.setup.attention = gpu.flash_attention ? AttentionImpl::kFlash : AttentionImpl::kEager;
    r.notes.push_back(std::string("attention ") + to_string(r.setup.attention) + " (default: " +
                      (gpu.flash_attention ? "flash, " : "eager: no FlashAttention kernels on ") +
                      gpu.name + (gpu.flash_attention ? " has FlashAttention kernels" : "") +
                      "; set --attention)");
  }
  if (l.gpus() > kMaxGpus) {
    throw InputError("impossible layout: dp x tp x pp x cp = " + std::to_string(l.gpus()) +
                     " GPUs; meshplan plans for at most 1048576");
  }
  const std::vector<std::string> problems = layout_problems(
      l, model, r.setup.seq, gpus, r.setup.attention == AttentionImpl::kEager);
  if (!problems.empty()) {
    std::string message = "impossible layout:";
    for (const std::string& p : problems) message += "\n  layout: " + p;
    throw InputError(message);
  }
  return r;
}

}  // namespace meshplan
