package engine

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseRate parses an iperf3 -b rate: a positive decimal number of bits per second
// with an optional K, M, G or T suffix (either case, powers of 1000 as in iperf3).
// Burst suffixes ("/N") and unlimited ("0") are rejected.
func parseRate(s string) (int64, error) {
	if s == "" {
		return 0, errors.New(`expected a bit rate such as "500M", got empty`)
	}
	num, mult := s, 1.0
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1e3
	case 'm', 'M':
		mult = 1e6
	case 'g', 'G':
		mult = 1e9
	case 't', 'T':
		mult = 1e12
	}
	if mult != 1 {
		num = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || strings.ContainsAny(num, "eExXpP+-_") || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf(`expected a decimal number of bit/s with an optional K, M, G or T suffix, e.g. "500M", got %q`, s)
	}
	bps := math.Round(v * mult)
	if bps < 1 {
		return 0, fmt.Errorf("expected a positive rate (unlimited UDP is not allowed), got %q", s)
	}
	if bps > 1e13 {
		return 0, fmt.Errorf("expected at most 10T, got %q", s)
	}
	return int64(bps), nil
}

// formatRate writes bits per second in the largest of G, M, K that divides it exactly,
// a form iperf3's -b accepts.
func formatRate(bps int64) string {
	switch {
	case bps%1_000_000_000 == 0:
		return strconv.FormatInt(bps/1_000_000_000, 10) + "G"
	case bps%1_000_000 == 0:
		return strconv.FormatInt(bps/1_000_000, 10) + "M"
	case bps%1_000 == 0:
		return strconv.FormatInt(bps/1_000, 10) + "K"
	}
	return strconv.FormatInt(bps, 10)
}

// formatSize writes bytes in the largest of M (MiB), K (KiB) or B that divides it.
func formatSize(n int) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n > 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n) + "B"
}

// parseSize parses formatSize's output (a plain number is taken as bytes).
func parseSize(s string) (int, error) {
	num, mult := s, 1
	if s != "" {
		switch s[len(s)-1] {
		case 'B':
			num = s[:len(s)-1]
		case 'K':
			num, mult = s[:len(s)-1], 1<<10
		case 'M':
			num, mult = s[:len(s)-1], 1<<20
		}
	}
	n, err := parseCount(num)
	if err != nil {
		return 0, fmt.Errorf(`expected a size such as "1300B", "128K" or "1M", got %q`, s)
	}
	if n > math.MaxInt32/mult {
		return 0, fmt.Errorf("expected at most %d bytes, got %q", math.MaxInt32, s)
	}
	return n * mult, nil
}

// parseCount parses a non-negative decimal integer written with digits only.
func parseCount(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("expected a decimal number, got %q", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("expected a decimal number, got %q: %w", s, err)
	}
	return n, nil
}
