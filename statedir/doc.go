// Package statedir manages a state directory: the configuration of a run
// (config.json), the epochs prepared into it (epoch-N directories in
// package epochdir's format) and the one being served (CURRENT). Every
// writer goes through one transaction (Txn), which owns the commit rule:
// config.json is written before the first epoch and removed again if no
// epoch commits.
//
// State manages STATE: config.json (written before the first epoch),
// epoch-N directories and CURRENT (the served epoch), each with a
// checksum. State.Open checks that the parts agree and lists what
// interrupted runs left, which State.Clean removes. State.Advance moves
// CURRENT to the oldest prepared epoch after it and deletes older ones.
package statedir
