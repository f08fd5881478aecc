package epoch

// EqualPyG is equalPyG for the external tests (bundled_test.go): PyG
// blocks against the independent rendering brutePyG.
var EqualPyG = equalPyG
