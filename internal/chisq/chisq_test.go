package chisq

import (
	"math"
	"testing"
)

// Quantiles from published chi-square tables.
func TestQuantileAgainstTables(t *testing.T) {
	for _, tc := range []struct {
		df   int
		z    float64
		want float64
	}{
		{10, Z999, 29.588},
		{49, Z999, 85.351},
		{99, Z999, 148.230},
		{999, Z999, 1143.917},
	} {
		got := Quantile(tc.df, tc.z)
		if math.Abs(got-tc.want)/tc.want > 0.01 {
			t.Errorf("Quantile(%d, %.3f) = %.3f, want %.3f ± 1%%", tc.df, tc.z, got, tc.want)
		}
	}
}

func TestStatistic(t *testing.T) {
	if got := Statistic([]float64{8, 12, 10}, 10); got != 0.8 {
		t.Fatalf("Statistic = %v, want 0.8", got)
	}
	if got := Statistic([]float64{5, 5}, 5); got != 0 {
		t.Fatalf("Statistic of expected counts = %v, want 0", got)
	}
}
