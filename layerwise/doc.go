// Package layerwise runs the passes of layer-wise inference: every node's
// full in-neighborhood in minibatches of consecutive node ids, by one
// sequential pass over the graph's chunks (package fullscan), with the
// feature rows of each minibatch's nodes (PyG's x = x_all[n_id]) from a
// feature store of the graph (package featstore): the graph's own, for
// the first layer, or one that a previous layer's outputs were written
// to (docs/PYTHON.md, "Layer-wise inference beyond memory").
//
// The rows are read one of two ways, chosen at Open:
//
//   - resident: where the feature file fits Options.ResidentBytes, it is
//     read whole into memory, once, sequentially, from Open on, beside
//     the chunks: mapped, and populated in file order in pieces of 8 MiB
//     (the page cache; each row checked against its CRC-32C as its piece
//     lands; see resident for why not anonymous memory); a minibatch's
//     rows are copied from there as soon as the sweep has passed its
//     largest node id. A pass reads the graph and the features once each,
//     sequentially: the floor the issue measures against.
//   - planned: otherwise, windows of consecutive minibatches (as many as
//     keep their rows within the cache, Options.CacheBytes) are read
//     under a featplan plan of the window's known future (the rows a
//     minibatch of consecutive seeds needs are its seeds' rows, one
//     sequential range, and its neighbors', scattered: a preloaded plan
//     reads the window's distinct rows in one sorted sweep where they fit
//     the cache, else Belady's MIN, coalesced aligned O_DIRECT extents
//     through Linux AIO, featplan.Reader), each row checked. A row needed
//     by two windows is read twice: the cache does not outlive its
//     window.
//
// The minibatches are made ahead (Options.Ahead) in a goroutine, in
// order; Next hands them out in order, and Batch.Rows copies a
// minibatch's rows into the caller's buffer (a server's shared buffer),
// concurrently with other minibatches' copies.
package layerwise
