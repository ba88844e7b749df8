// Options shared by several subcommands, with their parsing into costmodel values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

/// Accepts a finite number in (0, max] ("7e9"); the error says so in one line.
CLI::Validator positive_up_to(double max);

/// Accepts a finite decimal number in [min, max] (NaN, octal and hex spellings refused).
CLI::Validator number_in(double min, double max);

/// An output file flag (--out, --trace, --report): refuses an empty path at parse time (CLI11
/// names the flag: "--out: an empty path is never a valid output file; give a file name").
CLI::Validator output_file();

/// check_writable_target(path) with the error naming `flag` ("--out plan.json: ..."), for
/// commands that check every output before they compute or write anything.
void check_output_flag(const std::string& flag, const std::string& path);

/// --framework NAME (default "textbook"), checked against the known conventions at parse time.
void add_framework_option(CLI::App& cmd, std::string& framework);

/// --precision bf16|fp16|fp8 (default: bf16, fp16 on GPUs without bf16).
void add_precision_option(CLI::App& cmd, std::string& precision);

/// --mfu F in (0, 1] (default 0.5).
void add_mfu_option(CLI::App& cmd, double& mfu);

/// The named convention; throws InputError listing the known names.
FrameworkConvention require_framework(const std::string& name);

/// The named precision, or the GPU's default when `name` is empty (bf16, else fp16, with a note
/// in `notes`); throws InputError listing bf16, fp16, fp8.
Precision require_precision(const std::string& name, const GpuSpec& gpu,
                            std::vector<std::string>& notes);

/// The dense 16-bit peak MFU is measured against (bf16, or fp16 where the GPU has no bf16; fp8
/// training is still measured against the 16-bit peak, as Megatron-LM and NeMo report it).
/// Throws InputError when the GPU has no tensor cores of `precision` (fp8 before Hopper).
double require_mfu_peak_flops(const GpuSpec& gpu, Precision precision);

/// The layout and training flags shared by ledger, estimate and plan, as given on the command
/// line (0 / empty: not given).
struct LayoutFlags {
  std::int64_t dp = 0;  ///< 0: derived from --gpus (or 1)
  std::int64_t tp = 1, pp = 1, cp = 1, vpp = 1, mbs = 1, gbs = 0, seq = 0;
  int zero = 0;
  std::string recompute = "none";
  bool sp = false;
  std::string attention;  ///< empty: flash where the GPU has it, else eager
  std::vector<std::int64_t> stage_layers;
};

/// --dp --tp --pp --cp --vpp --mbs --gbs --seq --zero --recompute --sp --attention
/// --stage-layers, each with its unit and default in the help.
void add_layout_options(CLI::App& cmd, LayoutFlags& flags);

/// The layout, training setup and notes on the defaults taken (each one printed to the user).
struct ResolvedLayout {
  Layout layout;
  TrainingSetup setup;
  std::vector<std::string> notes;  ///< "gbs 8 (default: dp x mbs x pp ...)"
};

/// Resolves defaults against the model and GPU and validates the layout. Throws InputError
/// with every problem of the layout, one per line ("layout: tp 3 does not divide 32 attention
/// heads"). `gpus`: the GPU count to check dp x tp x pp x cp against, when given.
ResolvedLayout resolve_layout(const LayoutFlags& flags, const ModelSpec& model, const GpuSpec& gpu,
                              const FrameworkConvention& framework, Precision precision,
                              std::optional<std::int64_t> gpus);

}  // namespace meshplan
