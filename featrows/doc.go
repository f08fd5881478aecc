// Package featrows delivers minibatches' feature rows and labels from a
// graph's feature store (package featstore): the one executor behind
// `run --features`, `serve --features` and `sample --features`.
//
// A minibatch of an epoch is delivered under the epoch's featplan.Plan
// (Executor.Epoch): the plan's cache holds rows earlier minibatches read,
// so its minibatches must be read in the plan's order, each exactly once.
// Callers may assemble minibatches concurrently and finish in any order
// (serve's connections do); each one waits for its turn — every
// minibatch before it read or skipped — reads, and passes the turn on. A
// minibatch that will not be delivered (its assembly failed) still takes
// its turn (Epoch.Skip), or the ones after it would wait for ever. An
// epoch's reads end when the epoch two after it begins (or when the caller
// closes it).
//
// The feature file is opened O_DIRECT once, by New, and read through that
// descriptor until Close: a store replaced meanwhile (chunkify features
// --force removes the old generation's files) is still delivered whole,
// at the generation the store was opened at, epoch after epoch. Every row
// delivered was checked against its CRC-32C (a row refused is a
// featstore.DefectError, errors.Is featstore.ErrCorrupt, naming the file,
// the row and its bytes), every label against its page's and against
// num_classes: a read that fails delivers nothing.
//
// Seeds of the caller's choosing (sample requests, evaluation splits)
// have no plan: their rows are read directly, through the page cache
// (Executor.ReadDirect). Labels are the seeds' (Executor.Labels).
package featrows
