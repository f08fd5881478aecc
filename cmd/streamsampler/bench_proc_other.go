//go:build !unix

package main

// processCPU is 0 where getrusage is not available.
func processCPU() float64 { return 0 }

// procPeakRSS is 0 where getrusage is not available.
func procPeakRSS() int64 { return 0 }
