// Options shared by several subcommands, with their parsing into costmodel values.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

/// --framework NAME (default "textbook"), checked against the known conventions at parse time.
void add_framework_option(CLI::App& cmd, std::string& framework);

/// --precision bf16|fp16|fp8 (default "bf16").
void add_precision_option(CLI::App& cmd, std::string& precision);

/// --mfu F in (0, 1] (default 0.5).
void add_mfu_option(CLI::App& cmd, double& mfu);

/// The named convention; throws InputError listing the known names.
FrameworkConvention require_framework(const std::string& name);

/// The named precision; throws InputError listing bf16, fp16, fp8.
Precision require_precision(const std::string& name);

/// The GPU's dense peak for training GEMMs at `precision`; throws InputError when the GPU has
/// no such unit (bf16 on a V100: use --precision fp16).
double require_peak_flops(const GpuSpec& gpu, Precision precision);

}  // namespace meshplan
