// Package pipeline schedules a training run's epochs: it prepares the next
// epoch in the background through a sampling function (host.Backend's
// SampleEpoch), keeps two epochs resident (Store), hands out the current
// epoch's minibatches in order for concurrent assembly (Pipeline, Claim,
// RunOrdered), serves node lists beside the training stream (Split), and
// plans each epoch's feature reads (FeaturePlanning). run, serve and bench
// all go through it; a state directory (package statedir) persists what it
// prepares.
package pipeline
