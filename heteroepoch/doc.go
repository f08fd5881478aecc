// Package heteroepoch holds what a heterogeneous epoch is, apart from how
// it is sampled (DESIGN §3 "Relations", §4 "Heterogeneous epochs", §5
// "Heterogeneous minibatches"), as package epoch does for homogeneous
// graphs: the schema (node types with per-type local ids, relations
// (src type, name, dst type), PyG's num_neighbors dict rules), an epoch's
// Result (every layer's typed frontiers and each relation's samples), and
// its minibatches, assembled by binary search into PyG's HeteroData fields
// with pyg-lib's hetero_neighbor_sample semantics (AssemblePyG) or DGL's
// heterograph blocks (AssembleDGL).
//
// heterosample produces Results (through the devices, or the in-memory
// oracle); serve assembles and sends them without importing the samplers.
package heteroepoch
