// Package fullscan yields every node of a graph directory with all of its
// in-neighbors, as minibatches of consecutive node ids, by one sequential
// pass over edges.chunks: the minibatches of PyG's evaluation loader
// NeighborLoader(data, input_nodes=None, num_neighbors=[-1],
// shuffle=False) and of DGL's MultiLayerFullNeighborSampler(1) over
// torch.arange(N), which layer-wise inference (model.inference(x_all,
// loader)) iterates once per layer.
//
// Minibatch [a, b) needs exactly the CSR rows indptr[a]..indptr[b]:
// contiguous bytes of edges.chunks. So there is no epoch, no sampling and
// no random read of the graph: a reader goroutine streams the chunks in
// order (O_DIRECT where the file system allows it, the next chunk read
// while the current one is cut into minibatches), each chunk checked
// against its CRC-32C and its header before any of its words is used; a
// cutter copies each minibatch's adjacency out of them, in order, every
// neighbor id checked; workers (Options.Workers) relabel the minibatches
// in parallel; Next hands them out in order.
//
// A minibatch is one hop in the loaders' semantics (docs/DESIGN.md §5;
// with one full hop PyG's and DGL's coincide): NID is the seeds a..b−1 in
// order, then every other neighbor in order of first appearance (seeds in
// order, each one's neighbors in CSR order); edge k is (EdgeSrc[k] →
// EdgeDst[k]) in local ids, EdgeSrc into NID, EdgeDst into the seeds,
// ordered by destination then CSR position; EdgeIDs[k] is its position in
// the stored CSR (indptr[v] + p, as every sampler's edge ids). PyG's
// edge_index is [EdgeSrc; EdgeDst], its n_id NID, its batch_size b − a.
//
// Memory: the chunk buffers (Options.Buffers of them, each the largest
// chunk's read size: at most the graph's chunk size, which by the format
// holds any node's whole adjacency, so a hub of any degree fits), the
// relabel tables (per worker, an open-addressing hash table sized by the
// minibatch, at most half full; or 8 bytes per node where
// Options.TableBytes allows a dense one), the minibatches cut ahead (2 per
// worker, 4 bytes per edge) and the minibatches themselves, whose edges
// are what the caller asked for (a minibatch holding a hub of degree 10⁶
// has 10⁶ edges, as PyG's has).
package fullscan
