#include "planner/fit/student_t.hpp"

#include <cmath>

namespace meshplan {

double student_t_two_sided(double t, int dof) {
  const double theta = std::atan(t / std::sqrt(static_cast<double>(dof)));
  const double s = std::sin(theta);
  const double c2 = std::cos(theta) * std::cos(theta);
  if (dof % 2 == 0) {
    // 26.7.4: sin(theta) (1 + c^2 / 2 + 1 3 c^4 / (2 4) + ... + 1 3 .. (dof - 3) c^(dof - 2) /
    // (2 4 .. (dof - 2))).
    double term = 1;
    double sum = 1;
    for (int k = 2; k <= dof - 2; k += 2) {
      term *= c2 * (k - 1) / k;
      sum += term;
    }
    return s * sum;
  }
  // 26.7.3: (2 / pi) (theta + sin(theta) cos(theta) (1 + 2 c^2 / 3 + ... + 2 4 .. (dof - 3)
  // c^(dof - 3) / (3 5 .. (dof - 2)))); dof 1 is theta alone.
  double sum = 0;
  if (dof > 1) {
    double term = 1;
    sum = 1;
    for (int k = 3; k <= dof - 2; k += 2) {
      term *= c2 * (k - 1) / k;
      sum += term;
    }
  }
  const double pi = std::acos(-1.0);
  return 2 / pi * (theta + s * std::cos(theta) * sum);
}

double student_t_quantile(double q, int dof) {
  // P(T <= t) = (1 + P(|T| <= t)) / 2 for t >= 0; P(|T| <= t) rises with t from 0 to 1.
  const double target = 2 * q - 1;
  double lo = 0;
  double hi = 1;
  while (student_t_two_sided(hi, dof) < target) hi *= 2;
  while (hi - lo > 1e-12 * hi) {
    const double mid = (lo + hi) / 2;
    (student_t_two_sided(mid, dof) < target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace meshplan
