package analysis

import (
	"fmt"
	"math"
)

// Num formats a figure the one way every output shows it: three significant digits (a
// 0.1 % difference is the finest these measurements resolve), whole numbers from 1000 up,
// "-" where there is none.
func Num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
