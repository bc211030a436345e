package suite

import (
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

// SetWarmup reads --warmup: a duration, or off for no warm-up round; "" keeps the suite's.
func (o *Overrides) SetWarmup(v string) error {
	switch v {
	case "":
	case "off":
		o.NoWarmup = true
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return &setting.Error{Name: "warmup", Value: strconv.Quote(v), Want: "expected a duration such as 2s, or off"}
		}
		o.Warmup = d
	}
	return nil
}

// SetPrecision reads --precision: a percentage, or off for exactly the suite's repetitions;
// "" keeps the suite's.
func (o *Overrides) SetPrecision(v string) error {
	switch v {
	case "":
	case "off":
		o.Precision = -1
	default:
		f, err := ParseFraction(v)
		if err != nil || f <= 0 || f >= 1 {
			return &setting.Error{Name: "precision", Value: strconv.Quote(v), Want: "expected a percentage above 0% and below 100%, e.g. 5%, or off"}
		}
		o.Precision = f
	}
	return nil
}

// SetMargin reads --margin, the equivalence margin of a run with a precision target; ""
// keeps the suite's.
func (o *Overrides) SetMargin(v string) error {
	if v == "" {
		return nil
	}
	f, err := ParseFraction(v)
	if err != nil || f <= 0 || f >= 0.5 {
		return &setting.Error{Name: "margin", Value: strconv.Quote(v), Want: "expected a percentage above 0% and below 50%, e.g. 2%"}
	}
	o.Margin = f
	return nil
}
