// Package heterosample samples heterogeneous epochs into
// heteroepoch.Results (issue 27, item 2; DESIGN §3 "Relations", §4
// "Heterogeneous epochs", §5 "Heterogeneous minibatches").
//
// A heterogeneous graph has node types, each with per-type local ids
// 0..count-1, and relations (src type, name, dst type), each stored as a
// homogeneous in-edge graph whose rows are the dst type's nodes and whose
// neighbors are src-type ids (docs/FORMAT.md, "Heterogeneous graph
// directories"). An epoch samples layer by layer: at layer l, every
// relation whose dst type has a frontier samples that frontier in its own
// store, under its own key (rng.RelationKey: the relation's index in the
// schema's order is part of the key), through the same devices and kernel
// as a homogeneous layer (host.Sampler.SampleLayerKeyed). The next
// frontier of type s is its frontier and the valid samples of every
// relation whose src type is s.
//
// The schema, the Result and its assembly into minibatches are package
// heteroepoch's, which imports no sampler.
package heterosample
