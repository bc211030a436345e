#!/usr/bin/env python3
"""Regenerate panel.json: a panel of series with Apache Otava's change points.

The Go tests in internal/changepoint compare Detect against the stored
output, so they need no Python. Rerun this only to change the panel:

    python3 -m venv /tmp/otava-venv
    /tmp/otava-venv/bin/pip install apache-otava==0.8.0
    /tmp/otava-venv/bin/python internal/changepoint/testdata/otava_crosscheck.py

Otava runs with the settings Detect uses by default: window_len 50 (Otava's
default, also Detect's), min_magnitude 0, and max_pvalue equal to the Go
per-test level SplitLevel(n, Options{}) = 0.05 / (n - 2*3 + 1). Otava has no
minimum segment size (it behaves as MinSize 1).
"""

import json
import os
import sys

import numpy as np
from otava.analysis import TTestSignificanceTester, compute_change_points
from otava.change_point_divisive.calculator import PairDistanceCalculator

ALPHA = 0.05  # changepoint.DefaultAlpha
GO_MIN_SIZE = 3  # changepoint.DefaultMinSize
WINDOW_LEN = 50  # Otava's default window_len
SEED = 20260101


def level(n):
    """The Go default per-test threshold (changepoint.SplitLevel)."""
    return ALPHA / (n - 2 * GO_MIN_SIZE + 1)


def noise(rng, n, cv):
    """Lognormal noise of mean 1 and the given coefficient of variation."""
    s = np.sqrt(np.log1p(cv * cv))
    return np.exp(s * rng.standard_normal(n) - s * s / 2)


def steps(rng, n, cv, changes):
    """Mean-100 series with the value multiplied by f from index i on, for (i, f) in changes."""
    level_ = np.full(n, 100.0)
    for i, f in changes:
        level_[i:] *= f
    return level_ * noise(rng, n, cv)


def panel(rng):
    """The named series of the panel: flat, one step, two steps, outliers."""
    out = []
    for n in (10, 15, 20, 30, 45, 60, 100):
        for k in range(6):
            out.append((f"flat n={n} #{k}", steps(rng, n, 0.05, [])))
    for size in (0.03, 0.05, 0.10, 0.20, 0.40):
        for f in (1 - size, 1 + size):
            for n in (20, 30, 60):
                for at in sorted({3, n // 4, n // 2, n - 5}):
                    out.append((f"step x{f:.2f} at {at} n={n}", steps(rng, n, 0.05, [(at, f)])))
    for n in (30, 45, 60, 100):
        for k in range(6):
            a = int(rng.integers(4, n // 2 - 2))
            b = int(rng.integers(n // 2 + 2, n - 4))
            fa, fb = rng.choice([0.85, 0.9, 1.1, 1.2]), rng.choice([0.85, 0.9, 1.1, 1.2])
            out.append((f"two steps x{fa} at {a}, x{fb} at {b} n={n}", steps(rng, n, 0.05, [(a, fa), (b, fb)])))
    for n in (20, 30, 60):
        for k in range(6):
            x = steps(rng, n, 0.05, [(n // 2, 0.9)] if k % 2 else [])
            for _ in range(1 + k % 3):
                x[int(rng.integers(0, n))] *= rng.choice([0.6, 0.75, 1.3, 1.6])
            out.append((f"outliers {1 + k % 3}{' + step x0.9 at ' + str(n // 2) if k % 2 else ''} n={n} #{k}", x))
    return out


def analyse(name, x):
    """Otava's change points and two of its inner values, for the Go unit checks."""
    values = [float(v) for v in x]
    n = len(values)
    # The second value, the weak change points, is the same list object
    # that the merge step prunes, so it holds the final points: not kept.
    cps, _ = compute_change_points(values, window_len=WINDOW_LEN, max_pvalue=level(n), min_magnitude=0.0)
    cand = PairDistanceCalculator(np.array(values)).get_candidate_change_point(slice(0, n))
    tstat = TTestSignificanceTester(level(n)).compare(values[: cand.index], values[cand.index :])
    return {
        "name": name,
        "values": values,
        "max_pvalue": level(n),
        "otava": [int(c.index) for c in cps],
        "otava_pvalues": [float(c.stats.pvalue) for c in cps],
        "candidate_index": int(cand.index),
        "candidate_qhat": float(cand.qhat),
        "candidate_ttest_p": float(tstat.pvalue),
    }


def main():
    rng = np.random.default_rng(SEED)
    doc = {
        "generator": "otava_crosscheck.py",
        "otava_version": "0.8.0",
        "alpha": ALPHA,
        "go_min_size": GO_MIN_SIZE,
        "window_len": WINDOW_LEN,
        "series": [analyse(name, x) for name, x in panel(rng)],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "panel.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {len(doc['series'])} series to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
