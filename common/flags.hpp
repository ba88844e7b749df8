// Checks of command-line values shared by every binary (meshplan, meshplan-calibrate,
// meshplan-run): CLI11 validators whose messages name what is wrong and what would be right.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace meshplan {

/// Accepts a finite number in (0, max] ("7e9"); the error says so in one line.
CLI::Validator positive_up_to(double max);

/// Accepts a decimal whole number from 1 to `max` (the check of every integer flag: "1.5" and
/// "0x8" are refused by name, not left to CLI11's "Could not convert"). CLI11 names the flag:
/// "--gbs: must be a whole number from 1 to 1099511627776, got "1.5"". The bounds are
/// size_bounds.hpp's: kMaxDegree (2^24) for degrees, sizes and seq keeps every product inside
/// int64; kMaxGbs (2^40) for the global batch.
CLI::Validator whole_up_to(std::int64_t max);

/// Accepts a finite decimal number in [min, max] (NaN, inf, octal and hex spellings refused):
/// the check for every floating-point flag, in place of CLI::Range, which lets NaN through
/// (every comparison with NaN is false). CLI11 names the flag: "--timeout-s: must be a number
/// from 0.5 to 86400, got "nan"". Whole bounds are written in full (1000000), others in %g.
CLI::Validator number_in(double min, double max);

/// number_in's check of one value: "" when `text` is a finite decimal number in [min, max],
/// else "must be a number from MIN to MAX, got "TEXT"".
std::string number_in_problem(const std::string& text, double min, double max);

/// An output file flag (--out, --trace, --report): refuses an empty path at parse time (CLI11
/// names the flag: "--out: an empty path is never a valid output file; give a file name"), and
/// "-", which would write a file named "-": no command writes its output file to stdout, where
/// each prints its report ("--out: "-" is not standard output here: ...; give a file name (./-
/// for a file named "-")").
CLI::Validator output_file();

/// A flag whose value names something (--profile, --gpu, --model, --name): refuses an empty
/// value at parse time, which would otherwise fall back to the default silently. CLI11 names
/// the flag: "--profile: is empty; expected <what>".
CLI::Validator non_empty(const std::string& what);

}  // namespace meshplan
