// Number formatting (common/format.hpp): fixed() prints a value whole at any magnitude.
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/format.hpp"

using namespace meshplan;

TEST_CASE("fixed: ordinary values as %.*f prints them", "[format]") {
  CHECK(fixed(112.0, 1) == "112.0");
  CHECK(fixed(0.0145, 2) == "0.01");  // 0.0145 is 0.01449999... in binary
  CHECK(fixed(-3.5, 0) == "-4");      // round half to even: -3.5 -> -4
  CHECK(fixed(79.6, 3) == "79.600");
  CHECK(fixed(NAN, 1) == "nan");
  CHECK(fixed(INFINITY, 1) == "inf");
}

TEST_CASE("fixed: a huge value is never cut at a buffer's end", "[format]") {
  // A 64-byte buffer held 63 characters: 1.48e307 came out as its first 63 digits, a number
  // 10^245 times too small. 1.48e307 has 308 digits before the point; with ".0" that is 310.
  const std::string step = fixed(1.48e307, 1);
  CHECK(step.size() == 308 + 2);
  CHECK(step.substr(0, 12) == "147999999999");  // the double nearest 1.48e307
  CHECK(step.substr(step.size() - 2) == ".0");
  CHECK(step.find_first_not_of("0123456789.") == std::string::npos);
  // The largest double: 309 digits, a sign, and 3 decimals after the point.
  const std::string most = fixed(-DBL_MAX, 3);
  CHECK(most.size() == 1 + 309 + 1 + 3);
  CHECK(most.substr(0, 6) == "-17976");
  CHECK(most.substr(most.size() - 4) == ".000");
  // Many decimals are kept too (DBL_MIN has 1022 zeros after the point before its digits).
  CHECK(fixed(DBL_MIN, 1100).size() == 2 + 1100);
}

TEST_CASE("significant, percent and duration: small MFUs, huge percentages and times stay readable",
          "[format]") {
  // --mfu 1e-6 is 0.0001%: "0%" hid it; 42.5% keeps its decimal, 50% has none.
  CHECK(significant(1e-6 * 100, 3) == "0.0001");
  CHECK(significant(0.425 * 100, 3) == "42.5");
  CHECK(significant(0.5 * 100, 3) == "50");
  // percent: the same digits as a percentage, but never in scientific notation: plan
  // --time-tolerance 1000 is 1000 x 100 = 100000%, not "1e+05%"; 1e-7 is 0.00001%, not
  // "1e-05%"; 0.99996 to 3 digits rounds to 100%; 0.9999999 to 9 keeps its 7 digits.
  CHECK(percent(1000, 3) == "100000%");
  CHECK(percent(1e-7, 3) == "0.00001%");
  CHECK(percent(0.425, 3) == "42.5%");
  CHECK(percent(0.5, 3) == "50%");
  CHECK(percent(0.99996, 3) == "100%");
  CHECK(percent(0.9999999, 9) == "99.99999%");
  CHECK(percent(0, 3) == "0%");
  CHECK(percent(-0.0, 3) == "0%");  // significant() writes -0 as "-0"
  // 6.06e24 s / 3.15576e7 s per Julian year = 1.92e17 years: scientific, not 18 digits.
  CHECK(duration(6.06e24) == "1.92e+17 years");
  CHECK(duration(8.49e7) == "2.7 years");
}

TEST_CASE("join: texts with the separator between them, as the rule messages list them",
          "[format]") {
  using Texts = std::vector<std::string>;
  CHECK(join(Texts{}, "; ").empty());
  CHECK(join(Texts{"ep 1: no all-to-all"}, "; ") == "ep 1: no all-to-all");
  CHECK(join(Texts{"ep 1", "pp 2 with vpp 1", "recompute full"}, "; ") ==
        "ep 1; pp 2 with vpp 1; recompute full");
  // An empty part keeps its separators: three parts are always two separators.
  CHECK(join(Texts{"", "mlp"}, ",") == ",mlp");
  // The integer overload, beside it.
  CHECK(join(std::vector<std::int64_t>{7, 8, 8, 7}, ",") == "7,8,8,7");
}
