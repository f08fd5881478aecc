package main

import "strconv"

// mib formats a byte count in MiB with one decimal, as the reports print
// sizes.
func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }
