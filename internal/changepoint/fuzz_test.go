package changepoint

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// floatsFrom reads little-endian float64s from b, at most 300 of them so
// that one input stays fast while still spanning several split windows.
func floatsFrom(b []byte) []float64 {
	var x []float64
	for len(b) >= 8 && len(x) < 300 {
		x = append(x, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	return x
}

func floatBytes(x ...float64) []byte {
	var b []byte
	for _, v := range x {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// FuzzDetect checks that Detect never panics or hangs and that what it
// returns is well formed: an error only for a non-finite value, change
// points in order and leaving at least MinSize values in every segment.
func FuzzDetect(f *testing.F) {
	f.Add(floatBytes(100, 101, 99, 100, 80, 81, 79, 80), uint8(0))
	f.Add(floatBytes(1, 1, 1, 1, 1, 1, 1, 1, 1, 1e308, -1e308, 1e308, -1e308, 5e-324, 0, 0), uint8(1))
	f.Add(floatBytes(-3, -3, 7, 7, math.NaN(), 7), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, minSize uint8) {
		x := floatsFrom(data)
		o := Options{MinSize: int(minSize % 8)}
		cs, err := Detect(x, o)
		if err != nil {
			if !errors.Is(err, ErrNotFinite) {
				t.Fatalf("Detect(%v, %+v): unexpected error %v", x, o, err)
			}
			return
		}
		m := o.MinSize
		if m == 0 {
			m = DefaultMinSize
		}
		prev := 0
		for _, c := range cs {
			if c.Index-prev < m {
				t.Fatalf("Detect(%v, %+v) = %+v: segment before %d shorter than %d", x, o, cs, c.Index, m)
			}
			prev = c.Index
		}
		if len(cs) > 0 && len(x)-prev < m {
			t.Fatalf("Detect(%v, %+v) = %+v: last segment shorter than %d", x, o, cs, m)
		}
	})
}
