// Package memavail says how much memory this process may use: the
// system's available memory (MemAvailable), and the room the tightest
// memory cgroup limit (v1 or v2, the process's group or an ancestor)
// leaves. The out-of-core build sizes its partitions from it, the server
// and run their feature and chunk caches, and the CLI the Go heap's soft
// limit.
package memavail
