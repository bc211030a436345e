// Package stats turns repeated benchmark measurements into the figures
// cnibench reports: a per-configuration Summary (n, mean, median, standard
// deviation, Student-t confidence interval of the mean, 20 % trimmed mean and
// Tukey-flagged outliers), a distribution-free confidence interval of the
// median, and a two-group Comparison (the ratio of the means, with a Welch
// interval on the log scale and a Mann-Whitney U p-value, or paired by round
// Fieller's interval and the paired t; the smallest p it could reach and the
// smallest difference it could detect; and a better/worse verdict).
//
// The package is written for what cnibench actually collects: small samples
// (n = 3..30) on a machine whose results can swing by a factor of two. That
// is why every summary carries an interval rather than a bare mean, why
// outliers are flagged but never dropped (a 2x run is data about the
// machine, not a typo), why a robust trimmed mean sits beside the mean, and
// why comparisons rely on a rank test plus an interval on the log scale, and
// say "untestable" where the rank test cannot reach significance at their n.
//
// Reference values in the tests come from SciPy/NumPy; every deliberate
// departure from SciPy's defaults is documented on the function concerned.
//
// Missing values: NaN marks a measurement that does not exist (a failed or
// skipped run), so every function here ignores NaNs and reports the count
// of the values it actually used. Infinities are not treated as missing:
// Summarize lets them propagate into the moments, and Compare rejects them.
package stats
