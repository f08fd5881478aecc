"""streamsampler.from_pyg of a HeteroData (a stand-in: torch_geometric is
not installed here) writes a heterogeneous graph directory whose every
relation, read back with read_csr, is exactly that relation's
edge_index as in-edges (rows: the destination type's local ids, each row
the sources in (dst, src) order, multi-edges and loops kept), at the
positions its edge_perm.npy says; each type's features byte for byte,
labels, and boolean masks as splits/TYPE/NAME.npy. read_info reads it
back; bad input is refused by name and leaves nothing behind."""

import json
import os
import shutil
import tempfile
import unittest

import numpy as np

from streamsampler import from_pyg, read_csr, read_info
from streamsampler.convert import OutputExistsError, is_hetero_data
from tests.test_live import build_tools


class Storage:
    """A node or edge storage: plain attributes (PyG's ``keys()`` is a
    method since 2.4; ``vars`` serves a stand-in)."""

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


class FakeHeteroData:
    """What from_pyg reads of a torch_geometric.data.HeteroData:
    ``node_types``, ``edge_types`` and ``data[type]`` storages."""

    def __init__(self):
        self._nodes = {}
        self._edges = {}

    @property
    def node_types(self):
        return list(self._nodes)

    @property
    def edge_types(self):
        return list(self._edges)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self._edges.setdefault(key, Storage())
        return self._nodes.setdefault(key, Storage())


def reference_in_csr(ei, n_dst):
    """In-edge CSR of one relation by an independent route: Python's sort
    of the columns by (dst, src), multi-edges kept."""
    cols = sorted(range(ei.shape[1]), key=lambda c: (int(ei[1, c]), int(ei[0, c])))
    indptr = np.zeros(n_dst + 1, np.int64)
    for c in cols:
        indptr[int(ei[1, c]) + 1] += 1
    return np.cumsum(indptr), np.array([int(ei[0, c]) for c in cols], np.int64), np.array(cols, np.int64)


def messy_hetero(seed=0):
    """Three types, four relations (one within a type, with loops and
    multi-edges; one with no edges; src count > dst count and below)."""
    rng = np.random.default_rng(seed)
    d = FakeHeteroData()
    counts = {"author": 70, "paper": 40, "venue": 5}
    for t, n in counts.items():
        d[t].num_nodes = n
    d["paper"].x = rng.standard_normal((40, 6)).astype(np.float32)
    d["paper"].y = rng.integers(0, 4, 40)
    d["author"].x = rng.integers(0, 255, (70, 3)).astype(np.uint8)
    d["venue"].y = np.array([0, 1, 1, 2, 0])  # labels without features
    d["paper"].train_mask = rng.random(40) < 0.5
    d["paper"].test_mask = ~d["paper"].train_mask
    d["paper"].year = np.arange(40)  # not a mask
    d["author"].val_mask = rng.random(70) < 0.1
    d["author", "writes", "paper"].edge_index = np.stack([rng.integers(0, 70, 300), rng.integers(0, 30, 300)])
    ei = np.stack([rng.integers(0, 40, 200), rng.integers(0, 40, 200)])
    ei[:, :5] = [[3, 3, 3, 7, 7], [3, 3, 9, 9, 9]]  # a repeated loop, multi-edges
    d["paper", "cites", "paper"].edge_index = ei
    d["paper", "in", "venue"].edge_index = np.stack([np.arange(40), np.arange(40) % 5])
    d["venue", "none", "author"].edge_index = np.zeros((2, 0), np.int64)
    return d, counts


class HeteroConvertTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="heteroconv-")
        _, cls.ck = build_tools(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def test_detects_hetero(self):
        d, _ = messy_hetero()
        self.assertTrue(is_hetero_data(d))
        self.assertFalse(is_hetero_data(Storage(edge_index=np.zeros((2, 0)), num_nodes=3)))

    def test_round_trip(self):
        d, counts = messy_hetero()
        g = self.out("messy")
        info = from_pyg(d, g, chunk_size="4KiB", chunkify=self.ck)
        self.assertTrue(info.is_hetero)
        self.assertEqual(info, read_info(g))
        self.assertEqual(info.node_types, counts)
        self.assertEqual(list(info.relations), d.edge_types)  # no reverses unless asked
        self.assertEqual(info.num_nodes, sum(counts.values()))
        for et in d.edge_types:
            s, _, t = et
            ei = d[et].edge_index
            indptr, indices = read_csr(info.relations[et])
            self.assertEqual(len(indptr) - 1, max(counts[s], counts[t]), et)
            want_ptr, want_idx, want_perm = reference_in_csr(ei, counts[t])
            np.testing.assert_array_equal(indptr[:counts[t] + 1], want_ptr, err_msg=str(et))
            self.assertTrue(np.all(indptr[counts[t]:] == indptr[counts[t]]), "padding rows empty: %s" % (et,))
            np.testing.assert_array_equal(indices, want_idx, err_msg=str(et))
            self.assertEqual(info.relation_edges[et], ei.shape[1])
            perm = np.load(info.relation_edge_perm[et])
            np.testing.assert_array_equal(perm, want_perm, err_msg=str(et))
            # Stored edge i is column perm[i]: its source and its row.
            np.testing.assert_array_equal(ei[0][perm], indices)
            rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
            np.testing.assert_array_equal(ei[1][perm], rows)
        self.assertEqual(info.type_features, {"paper": ("float32", 6), "author": ("uint8", 3)})
        for t in ("paper", "author"):
            with open(os.path.join(g, "features", t, "features.json")) as f:
                fm = json.load(f)
            raw = np.fromfile(os.path.join(g, "features", t, fm["features"]["file"]), d[t].x.dtype)
            np.testing.assert_array_equal(raw.reshape(d[t].x.shape), d[t].x)
        with open(os.path.join(g, "features", "paper", "features.json")) as f:
            lab = json.load(f)["labels"]
        y = np.fromfile(os.path.join(g, "features", "paper", lab["file"]), "<i4")
        np.testing.assert_array_equal(y, d["paper"].y)
        np.testing.assert_array_equal(np.load(info.type_labels["venue"]), d["venue"].y)
        self.assertEqual(set(info.type_splits), {"paper", "author"})
        self.assertEqual(set(info.type_splits["paper"]), {"train", "test"})
        for t, sp in info.type_splits.items():
            for name, path in sp.items():
                self.assertEqual(path, os.path.join(g, "splits", t, name + ".npy"))
                np.testing.assert_array_equal(np.load(path), np.flatnonzero(getattr(d[t], name + "_mask")))

    def test_add_reverse(self):
        d = FakeHeteroData()
        d["a"].num_nodes, d["b"].num_nodes = 4, 3
        ei = np.array([[0, 1, 3, 3], [2, 2, 0, 1]])
        d["a", "to", "b"].edge_index = ei
        info = from_pyg(d, self.out("rev"), chunk_size="4KiB", chunkify=self.ck, add_reverse=True)
        self.assertEqual(set(info.relations), {("a", "to", "b"), ("b", "rev_to", "a")})
        self.assertNotIn(("b", "rev_to", "a"), info.relation_edge_perm)
        indptr, indices = read_csr(info.relations[("b", "rev_to", "a")])
        want_ptr, want_idx, _ = reference_in_csr(ei[::-1], 4)
        np.testing.assert_array_equal(indptr[:5], want_ptr)
        np.testing.assert_array_equal(indices, want_idx)

    def test_refuses(self):
        cases = []
        d, _ = messy_hetero()
        d["paper", "cites", "paper"].edge_index = np.array([[0, 40], [1, 2]])
        cases.append((d, r"\('paper', 'cites', 'paper'\)\]\.edge_index\[0\]\[1\] = 40.*0\.\.39"))
        d, _ = messy_hetero()
        d["paper", "in", "venue"].edge_index = np.array([[0], [5]])
        cases.append((d, r"edge_index\[1\]\[0\] = 5"))
        d, _ = messy_hetero()
        d["paper"].x = np.zeros((39, 6), np.float32)
        cases.append((d, r"data\['paper'\]\.x: shape \(39, 6\), want \[num_nodes, F\] = \[40, F\]"))
        d, _ = messy_hetero()
        d["ghost", "x", "paper"].edge_index = np.zeros((2, 0), np.int64)
        cases.append((d, r"node type 'ghost' is not in data.node_types"))
        d, _ = messy_hetero()
        d["paper"].train_mask = np.ones(3, bool)
        cases.append((d, r"data\['paper'\]: mask 'train': shape \(3,\)"))
        d, _ = messy_hetero()
        d["a___b"].num_nodes = 2
        cases.append((d, r"node type 'a___b'"))
        d, _ = messy_hetero()
        d["paper", "cites", "paper"].edge_index = np.zeros((3, 2), np.int64)
        cases.append((d, r"shape \(3, 2\), want \[2, E\]"))
        for i, (data, regex) in enumerate(cases):
            with self.subTest(i=i):
                g = self.out("bad%d" % i)
                with self.assertRaisesRegex(ValueError, regex):
                    from_pyg(data, g, chunk_size="4KiB", chunkify=self.ck)
                self.assertFalse(os.path.exists(g))
                self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith(".bad")], [])

    def test_existing_output(self):
        d, _ = messy_hetero(1)
        g = self.out("exists")
        from_pyg(d, g, chunk_size="4KiB", chunkify=self.ck)
        with self.assertRaises(OutputExistsError):
            from_pyg(d, g, chunk_size="4KiB", chunkify=self.ck)
        d["paper"].num_nodes = 41
        d["paper"].x = np.zeros((41, 2), np.float32)
        d["paper"].y = np.zeros(41, np.int64)
        d["paper"].train_mask = d["paper"].test_mask = None
        info = from_pyg(d, g, chunk_size="4KiB", chunkify=self.ck, force=True)
        self.assertEqual(info.node_types["paper"], 41)


if __name__ == "__main__":
    unittest.main()
