// Package chisq holds the chi-square goodness-of-fit arithmetic that the
// randomness tests of several packages share (rng, hls, epoch): the
// statistic over observed counts, and an upper quantile to compare it with.
package chisq

import "math"

// Normal quantiles for the significance levels the tests use.
const (
	Z999  = 3.090 // 99.9%
	Z9995 = 3.291 // 99.95%
)

// Statistic is Σ (observed − expected)² / expected over the cells, all of
// which have the same expected count.
func Statistic(observed []float64, expected float64) float64 {
	chi := 0.0
	for _, c := range observed {
		chi += (c - expected) * (c - expected) / expected
	}
	return chi
}

// Quantile approximates the upper quantile of the chi-square distribution
// with df degrees of freedom at the standard normal quantile z
// (Wilson–Hilferty); it is within 1% of the exact value for df ≥ 10.
func Quantile(df int, z float64) float64 {
	v := float64(df)
	a := 2 / (9 * v)
	return v * math.Pow(1-a+z*math.Sqrt(a), 3)
}
