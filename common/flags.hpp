// Checks of command-line values shared by every binary (meshplan, meshplan-calibrate,
// meshplan-run): CLI11 validators whose messages name what is wrong and what would be right.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace meshplan {

/// Accepts a finite decimal number in (0, max] ("7e9"); the error says so in one line, and
/// names an underflow ("1e-310", below the smallest normal double) as number_in does.
CLI::Validator positive_up_to(double max);

/// Accepts a decimal whole number from 1 to `max` (the check of every integer flag: "1.5" and
/// "0x8" are refused by name, not left to CLI11's "Could not convert"). CLI11 names the flag:
/// "--gbs: must be a whole number from 1 to 1099511627776, got "1.5"". The bounds are
/// size_bounds.hpp's: kMaxDegree (2^24) for degrees, sizes and seq keeps every product inside
/// int64; kMaxGbs (2^40) for the global batch.
CLI::Validator whole_up_to(std::int64_t max);

/// whole_up_to from `min` (0 for --zero, --cpu-offload-layers): "--zero: must be a whole number
/// from 0 to 3, got "4""; "0x3" is refused as "must be a decimal whole number, got "0x3"".
CLI::Validator whole_in(std::int64_t min, std::int64_t max);

/// Accepts a finite decimal number in [min, max] (NaN, inf, octal and hex spellings refused):
/// the check for every floating-point flag, in place of CLI::Range, which lets NaN through
/// (every comparison with NaN is false). CLI11 names the flag: "--timeout-s: must be a number
/// from 0.5 to 86400, got "nan"". Whole bounds are written in full (1000000), others in %g.
CLI::Validator number_in(double min, double max);

/// number_in's check of one value, the one parse of every floating-point flag: "" when `text`
/// is a finite decimal number in [min, max] that a double holds as given, else "must be a
/// number from MIN to MAX, got "TEXT"", followed for a nonzero magnitude below the smallest
/// normal double (2.2e-308: "1e-310", "1e-400", which strtod reads as a subnormal or 0 and
/// std::stod throws std::out_of_range for) by ", whose magnitude is below double precision's
/// smallest normal number (2.2e-308), so it would be read as another number; give 0 or a number
/// of magnitude 1e-300 or more".
std::string number_in_problem(const std::string& text, double min, double max);

/// The value of `text` for a flag read in a callback (where no validator converts it): throws
/// InputError "FLAG: <number_in_problem>" when number_in_problem finds one, else returns it.
double number_value(const std::string& flag, const std::string& text, double min, double max);

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

/// "" unless one of `args` (a command line without the program name; scanning stops at "--")
/// is a long flag with an empty value after "=": CLI11 reads "--sp=" as "--sp" given without a
/// value, which an optional-value flag takes as its default (on) where "--sp ''" is refused. Else
/// the error: ""--sp=": the value after "=" is empty; give one (--sp=VALUE or --sp VALUE), or
/// leave the flag out".
std::string empty_assignment_problem(const std::vector<std::string>& args);

/// Makes every single-valued option of `app`'s subcommands (and theirs, recursively; not
/// `app`'s own --help and --version) refuse a repeat: CLI11 2.1 lets a flag given twice
/// (add_flag: MultiOptionPolicy::TakeLast, "--json --json", "--moe-a2a-overlap
/// --moe-a2a-overlap") take the last one silently, where two different values ("--sp on --sp
/// off") leave it unclear which was meant. Options that take a list (--recompute-modules,
/// --stage-layers, fit's files: more than one value per occurrence; fit's --moe-runs: one per
/// occurrence, take_all) keep every value given. Call it after every option is added.
void refuse_repeated_flags(CLI::App& app);

/// The error for CLI11's refusal of a repeated single-valued option (its ArgumentMismatch
/// "--tp: At Most 1 required but received 2"): "--tp is given 2 times; give it once (which
/// value was meant?)"; "" for any other parse error.
std::string repeated_flag_problem(const CLI::ParseError& error);

}  // namespace meshplan
