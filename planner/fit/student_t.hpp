// Student's t distribution, what a prediction interval from a handful of studies needs: the
// interval for a new study's run widens with how few studies set it (fit.hpp interval_for).
#pragma once

namespace meshplan {

/// P(|T| <= t) for T Student-t distributed with `dof` degrees of freedom (Abramowitz and Stegun
/// 1964, 26.7.3 for odd and 26.7.4 for even dof: finite series in theta = atan(t / sqrt(dof))).
/// Preconditions: dof >= 1, t >= 0. Dimensionless.
double student_t_two_sided(double t, int dof);

/// The q-quantile of Student's t with `dof` degrees of freedom, for q in [0.5, 1): the t with
/// P(T <= t) = q, by bisection on student_t_two_sided to 1e-12 (dof 1 and q 0.9: tan(0.4 pi) =
/// 3.0777; dof 2: (2q - 1) / sqrt(2 q (1 - q)) = 1.8856; large dof: the normal's 1.2816).
/// Preconditions: dof >= 1, 0.5 <= q < 1 - 1e-9.
double student_t_quantile(double q, int dof);

}  // namespace meshplan
