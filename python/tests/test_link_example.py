"""The link-prediction example and its reference (python/examples/pyg_link.py,
reference_link_loader.py) and the accuracy runner (bench/link_accuracy.py),
with torch only: torch_geometric is stood in for by tests/fakes.py's
(``Data``, ``SAGEConv`` in plain torch) and a RandomLinkSplit written here
(this machine has no torch_geometric; the GPU machine runs the real one).

* ``auc`` equals the pairwise definition (ties half) on scores with ties;
* the reference LinkNeighborLoader's minibatches hold PyG's invariants:
  n_id starts with the sorted unique endpoints of positives and
  negatives, edge_label_index in local ids (positives = the seed edges of
  input_id), labels incremented as PyG does, triplet shapes, every
  sampled edge a true edge, one fresh draw per minibatch, negatives
  uniform (chi-square);
* the example runs on Cora with the reference loader, reproducibly
  (same seed, same AUC), learning something (AUC above 0.5);
* the runner's summary and verdict.
"""

import contextlib
import importlib
import io
import json
import math
import os
import sys
import types
import unittest
from unittest import mock

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(REPO, "python", "examples")
TESTDATA = os.path.join(REPO, "testdata")


def fake_modules():
    """torch_geometric stand-ins: fakes.fake_pyg_nn plus ``del data.attr``
    and transforms.RandomLinkSplit."""
    from tests.fakes import fake_pyg_nn

    mods = fake_pyg_nn()
    base = mods["torch_geometric.data"].Data

    class Data(base):
        def __delattr__(self, k):
            del self._store[k]

        def __contains__(self, k):
            return k in self._store

    mods["torch_geometric.data"].Data = Data

    class RandomLinkSplit:
        """Undirected edges (u <= v once) permuted by torch's generator,
        cut into validation, test and training positives; validation and
        test get as many uniform negatives (label 0); message passing on
        the training edges (both directions), and for the test also on the
        validation edges, as PyG's transform does."""

        def __init__(self, num_val, num_test, is_undirected, add_negative_train_samples):
            assert is_undirected and not add_negative_train_samples
            self.num_val, self.num_test = num_val, num_test

        def __call__(self, data):
            ei = data.edge_index
            und = ei[:, ei[0] <= ei[1]]
            perm = torch.randperm(und.size(1))
            nv, nt = int(math.floor(self.num_val * und.size(1))), int(math.floor(self.num_test * und.size(1)))
            val, test, train = und[:, perm[:nv]], und[:, perm[nv:nv + nt]], und[:, perm[nv + nt:]]

            def both(e):
                return torch.cat([e, e.flip(0)], 1)

            def labelled(pos):
                neg = torch.randint(data.num_nodes, (2, pos.size(1)))
                return torch.cat([pos, neg], 1), torch.cat([torch.ones(pos.size(1)), torch.zeros(pos.size(1))])

            out = []
            for mp, (eli, lab) in ((both(train), (train, torch.ones(train.size(1)))), (both(train), labelled(val)),
                                   (both(torch.cat([train, val], 1)), labelled(test))):
                out.append(Data(x=data.x, y=data.y, edge_index=mp, num_nodes=data.num_nodes, edge_label_index=eli,
                                edge_label=lab))
            return tuple(out)

    tr = types.ModuleType("torch_geometric.transforms")
    tr.RandomLinkSplit = RandomLinkSplit
    mods["torch_geometric"].transforms = tr
    mods["torch_geometric.transforms"] = tr
    return mods


class ExampleModules:
    """Imports pyg_link and reference_link_loader against the stand-ins."""

    def __enter__(self):
        self.patch = mock.patch.dict(sys.modules, fake_modules())
        self.patch.__enter__()
        self.path = mock.patch.object(sys, "path", [EXAMPLES] + sys.path)
        self.path.__enter__()
        for m in ("pyg_link", "reference_link_loader", "reference_loader"):
            sys.modules.pop(m, None)
        return importlib.import_module("pyg_link"), importlib.import_module("reference_link_loader")

    def __exit__(self, *exc):
        self.path.__exit__(*exc)
        self.patch.__exit__(*exc)


@unittest.skipIf(torch is None, "needs torch")
class Auc(unittest.TestCase):
    def test_pairwise_definition(self):
        with ExampleModules() as (ex, _):
            g = torch.Generator().manual_seed(0)
            for n in (2, 7, 50, 301):
                scores = torch.randint(0, 6, (n,), generator=g).float()  # many ties
                labels = torch.arange(n) % 3 == 0
                pos, neg = scores[labels], scores[~labels]
                want = float(((pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double())
                             .mean())
                self.assertAlmostEqual(ex.auc(scores, labels.float()), want, places=12)
            self.assertEqual(ex.auc(torch.tensor([0.1, 0.9]), torch.tensor([0.0, 1.0])), 1.0)
            self.assertEqual(ex.auc(torch.tensor([0.9, 0.1]), torch.tensor([0.0, 1.0])), 0.0)
            with self.assertRaisesRegex(ValueError, "positives and negatives"):
                ex.auc(torch.ones(3), torch.ones(3))


@unittest.skipIf(torch is None, "needs torch")
class ReferenceLinkLoader(unittest.TestCase):
    def graph(self, Data):
        g = torch.Generator().manual_seed(3)
        n = 200
        e = torch.randint(0, n, (2, 1500), generator=g)
        return Data(x=torch.randn(n, 4, generator=g), y=torch.randint(0, 3, (n,), generator=g),
                    edge_index=e, num_nodes=n)

    def check(self, batch, data, eli, mode, labels, amount):
        n_id = batch.n_id
        p = batch.input_id.numel()
        ei = batch.edge_index
        # Every sampled edge is the edge_index column e_id, neighbor -> node.
        self.assertTrue(torch.equal(data.edge_index[0, batch.e_id], n_id[ei[0]]))
        self.assertTrue(torch.equal(data.edge_index[1, batch.e_id], n_id[ei[1]]))
        self.assertNotIn("batch_size", batch.keys())
        num_neg = math.ceil(p * amount) if mode else 0
        if mode == "triplet":
            self.assertNotIn("edge_label", batch.keys())
            src, dst = n_id[batch.src_index], n_id[batch.dst_pos_index]
            neg = batch.dst_neg_index
            self.assertEqual(tuple(neg.shape), (p,) if amount == 1 else (p, int(amount)))
            ends = torch.cat([src, dst, n_id[neg.reshape(-1)]])
        else:
            lab = batch.edge_label_index
            self.assertEqual(tuple(lab.shape), (2, p + num_neg))
            src, dst = n_id[lab[0, :p]], n_id[lab[1, :p]]
            ends = n_id[lab.reshape(-1)]
            if labels is None and mode is None:
                self.assertNotIn("edge_label", batch.keys())
            else:
                want = torch.ones(p) if labels is None else labels[batch.input_id]
                if labels is not None and mode == "binary" and int(labels.min()) == 0:
                    want = want + 1
                if mode == "binary":
                    want = torch.cat([want, want.new_zeros(num_neg)])
                self.assertTrue(torch.equal(batch.edge_label, want))
        self.assertTrue(torch.equal(torch.stack([src, dst]), eli[:, batch.input_id]))
        s = batch.num_sampled_nodes[0]
        self.assertTrue(torch.equal(n_id[:s], torch.unique(ends)))
        self.assertTrue(torch.equal(batch.x, data.x[n_id]))

    def test_fields(self):
        with ExampleModules() as (_, ref):
            Data = sys.modules["torch_geometric.data"].Data
            data = self.graph(Data)
            torch.manual_seed(0)
            eli = data.edge_index[:, torch.randperm(1500)[:200]]
            labels = torch.randint(0, 2, (200,))
            for mode, amount, lab in ((None, 0, None), (None, 0, labels), ("binary", 1, None), ("binary", 2.5, labels),
                                      ("triplet", 1, None), ("triplet", 3, None)):
                with self.subTest(mode=mode, amount=amount, labels=lab is not None):
                    ns = None if mode is None else {"mode": mode, "amount": amount}
                    lo = ref.LinkNeighborLoader(data, [4, 3], edge_label_index=eli, edge_label=lab, neg_sampling=ns,
                                                batch_size=32, shuffle=True)
                    ids = []
                    for batch in lo:
                        self.check(batch, data, eli, mode, lab, amount)
                        ids.append(batch.input_id)
                    self.assertTrue(torch.equal(torch.sort(torch.cat(ids)).values, torch.arange(200)))
            with self.assertRaisesRegex(ValueError, "triplet"):
                ref.LinkNeighborLoader(data, [2], edge_label_index=eli, edge_label=labels, neg_sampling="triplet")

    def test_reproducible_and_fresh(self):
        with ExampleModules() as (_, ref):
            data = self.graph(sys.modules["torch_geometric.data"].Data)

            def epoch(seed):
                torch.manual_seed(seed)
                lo = ref.LinkNeighborLoader(data, [4, 3], neg_sampling="binary", batch_size=64, shuffle=True)
                return [(b.n_id, b.edge_label_index) for b in lo]
            a, b, c = epoch(1), epoch(1), epoch(2)
            self.assertTrue(all(torch.equal(x[0], y[0]) and torch.equal(x[1], y[1]) for x, y in zip(a, b)))
            self.assertFalse(all(torch.equal(x[0], y[0]) for x, y in zip(a, c)))

    def test_per_epoch_samples(self):
        """per_epoch_samples=True: a node's sampled in-edges are the same in
        every minibatch of an epoch and change between epochs; the default
        draws afresh per minibatch."""
        with ExampleModules() as (_, ref):
            data = self.graph(sys.modules["torch_geometric.data"].Data)

            def samples(lo):
                out = []
                for _ in range(2):
                    seen = {}
                    for b in lo:
                        dst = b.n_id[b.edge_index[1]].tolist()
                        for v, e in zip(dst, b.e_id.tolist()):
                            seen.setdefault(v, {}).setdefault(b.input_id[0].item(), set()).add(e)
                    out.append(seen)
                return out
            torch.manual_seed(0)
            per_epoch = samples(ref.LinkNeighborLoader(data, [2], neg_sampling="binary", batch_size=50, shuffle=True,
                                                       per_epoch_samples=True))
            torch.manual_seed(0)
            fresh = samples(ref.LinkNeighborLoader(data, [2], neg_sampling="binary", batch_size=50, shuffle=True))

            def consistent(seen):
                multi = [v for v in seen.values() if len(v) > 1]
                return len(multi) > 10 and all(len({frozenset(s) for s in v.values()}) == 1 for v in multi)
            self.assertTrue(consistent(per_epoch[0]) and consistent(per_epoch[1]))
            self.assertFalse(consistent(fresh[0]))
            first = {v: next(iter(s.values())) for v, s in per_epoch[0].items()}
            second = {v: next(iter(s.values())) for v, s in per_epoch[1].items()}
            self.assertTrue(any(first[v] != second[v] for v in first.keys() & second.keys()))

    def test_negatives_uniform(self):
        """Chi-square of the binary negatives' endpoints over 20 node bins."""
        from scipy.stats import chisquare
        with ExampleModules() as (_, ref):
            data = self.graph(sys.modules["torch_geometric.data"].Data)
            torch.manual_seed(5)
            lo = ref.LinkNeighborLoader(data, [1], neg_sampling=("binary", 2), batch_size=500, shuffle=True)
            ends = []
            for batch in lo:
                p = batch.input_id.numel()
                ends.append(batch.n_id[batch.edge_label_index[:, p:]].reshape(-1))
            ends = torch.cat(ends)
            self.assertEqual(ends.numel(), 2 * 2 * 1500)
            counts = torch.bincount(ends // 10, minlength=20).numpy()
            self.assertGreater(chisquare(counts).pvalue, 1e-3)


@unittest.skipIf(torch is None, "needs torch")
class Example(unittest.TestCase):
    def test_reference_on_cora(self):
        try:
            import scipy  # noqa: F401  (the Planetoid pickles)
        except ImportError:
            self.skipTest("Cora needs scipy")
        with ExampleModules() as (ex, _):
            args = ["--root", TESTDATA, "--loader", "reference", "--epochs", "2", "--seed", "3", "--device", "cpu"]
            with contextlib.redirect_stdout(io.StringIO()) as out:
                a = ex.main(args)
                b = ex.main(args)
        self.assertEqual(json.loads(out.getvalue().splitlines()[-1])["test_auc"], b["test_auc"])
        self.assertEqual(a["test_auc"], b["test_auc"])  # torch.manual_seed fixes split, samples, negatives
        self.assertGreater(a["test_auc"], 0.5)
        self.assertLessEqual(a["test_auc"], 1.0)
        self.assertEqual(a["loader"], "reference")
        # Cora's 5278 undirected edges, 10 % / 10 %: validation and test
        # with as many negatives.
        self.assertEqual((a["val_edges"], a["test_edges"]), (2 * 527, 2 * 527))
        self.assertEqual(a["train_edges"], 5278 - 2 * 527)


    def test_streamsampler_path_with_stand_in_server(self):
        """The --loader streamsampler path end to end (from_pyg of the
        split graphs, the training stream, the validation and test splits,
        x from the feature store) with the link server stood in for by
        tests/link_fakes.py, which serves from the graph directory's CSR
        and store: until the server has link prediction."""
        try:
            import scipy  # noqa: F401
        except ImportError:
            self.skipTest("Cora needs scipy")
        import tempfile

        from streamsampler.featstore import FeatureStore
        from streamsampler.graph import read_csr
        from streamsampler.loader.link_loader import LinkLoader
        from tests.link_fakes import FakeLinkClient
        from tests.test_live import build_tools

        tmp = tempfile.mkdtemp(prefix="ss-link-example-")
        self.addCleanup(__import__("shutil").rmtree, tmp, True)
        ss, ck = build_tools(tmp)
        made = []

        def client(loader):
            if loader._client is None:
                indptr, indices = read_csr(loader.graph)
                loader._client = FakeLinkClient(indptr, indices, loader.num_nodes, loader.fanouts, loader.edges,
                                                loader.batch_size, seed=loader.seed % (1 << 32), mode=loader.mode,
                                                amount=loader.amount, drop_last=loader.drop_last,
                                                x=np.asarray(FeatureStore(loader.graph).x))
                made.append(loader._client)
            return loader._client

        with ExampleModules() as (ex, _), mock.patch.object(LinkLoader, "client", client):
            with contextlib.redirect_stdout(io.StringIO()):
                r = ex.main(["--root", TESTDATA, "--loader", "streamsampler", "--epochs", "1", "--seed", "1",
                             "--device", "cpu", "--chunkify", ck, "--binary", ss])
        self.assertEqual(r["loader"], "streamsampler")
        self.assertGreater(r["test_auc"], 0.5)
        self.assertEqual(len(made), 3)  # training stream, validation split, test split
        train, val, test = made
        self.assertEqual([rec["semantics"] for rec in train.log], ["pyg"] * len(train.log))
        self.assertEqual(len(train.splits) + len(val.splits), 1)  # the validation split (on its own stand-in)
        # Every training minibatch had binary negatives, one per positive.
        self.assertTrue(all(len(rec["neg_src"]) == len(rec["input_id"]) for rec in train.log))


    def test_streamsampler_path_live(self):
        """The --loader streamsampler path against a real server (skipped
        where serve has no link prediction)."""
        try:
            import scipy  # noqa: F401
        except ImportError:
            self.skipTest("Cora needs scipy")
        import shutil
        import tempfile

        from tests.test_link_loader import link_server
        tmp = tempfile.mkdtemp(prefix="ss-link-example-live-")
        self.addCleanup(shutil.rmtree, tmp, True)
        ss, ck = link_server(tmp)
        with ExampleModules() as (ex, _):
            with contextlib.redirect_stdout(io.StringIO()):
                r = ex.main(["--root", TESTDATA, "--loader", "streamsampler", "--epochs", "2", "--seed", "1",
                             "--device", "cpu", "--chunkify", ck, "--binary", ss])
        self.assertEqual(r["loader"], "streamsampler")
        self.assertGreater(r["test_auc"], 0.5)


class Runner(unittest.TestCase):
    def test_summary(self):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        try:
            la = importlib.import_module("link_accuracy")
        finally:
            sys.path.pop(0)
        runs = [dict(loader="reference", test_auc=a, seconds=1.0) for a in (0.90, 0.92, 0.91)] + \
            [dict(loader="streamsampler", test_auc=a, seconds=2.0) for a in (0.905, 0.915, 0.90)]
        s = la.summary(runs, ["reference", "streamsampler"])
        self.assertAlmostEqual(s["reference"]["mean"], 91.0)
        self.assertAlmostEqual(s["streamsampler"]["mean"], 90.666666666, places=6)
        self.assertAlmostEqual(s["diff"], -1 / 3, places=6)
        self.assertTrue(s["pass"])
        runs[3]["test_auc"] = 0.85
        self.assertFalse(la.summary(runs, ["reference", "streamsampler"])["pass"])


if __name__ == "__main__":
    unittest.main()


try:
    import torch_geometric  # noqa: F401
    from torch_geometric.sampler.neighbor_sampler import edge_sample as pyg_edge_sample
    HAVE_PYG = True
except ImportError:
    HAVE_PYG = False


@unittest.skipUnless(HAVE_PYG, "needs torch_geometric (the GPU machine has it)")
class AgainstPyG(unittest.TestCase):
    """PyG's own edge_sample (torch_geometric/sampler/neighbor_sampler.py)
    against the reference's link fields, given the same torch seed (both
    draw the negatives with torch.randint in the same order), with a node
    sampler that samples nothing (n_id = the seeds): edge_label_index,
    edge_label, the triplet indices, input_id; and the drop-in's
    finish_minibatch builds a real torch_geometric Data."""

    def pyg(self, eli, labels, input_id, num_nodes, ns):
        import inspect

        from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling, SamplerOutput

        neg = None if ns is None else NegativeSampling(ns[0], ns[1])
        if labels is not None and neg is not None and neg.is_binary() and int(labels.min()) == 0:
            labels = labels + 1  # LinkLoader.__init__
        inputs = EdgeSamplerInput(input_id, eli[0, input_id], eli[1, input_id],
                                  None if labels is None else labels[input_id])

        def sample_fn(*args, **kwargs):
            seed = args[0]
            seed = getattr(seed, "node", seed)
            return SamplerOutput(node=seed, row=torch.empty(0, dtype=torch.long), col=torch.empty(0, dtype=torch.long),
                                 edge=None)
        params = inspect.signature(pyg_edge_sample).parameters
        kw = dict(neg_sampling=neg)
        if "disjoint" in params:
            kw["disjoint"] = False
        out = pyg_edge_sample(inputs, sample_fn, num_nodes, **kw)
        if inspect.iscoroutine(out):
            import asyncio
            out = asyncio.run(out)
        return out

    def test_link_fields(self):
        sys.path.insert(0, EXAMPLES)
        try:
            for m in ("reference_link_loader", "reference_loader"):
                sys.modules.pop(m, None)
            ref = importlib.import_module("reference_link_loader")
        finally:
            sys.path.pop(0)
        from torch_geometric.data import Data
        g = torch.Generator().manual_seed(0)
        n = 100
        data = Data(x=torch.randn(n, 3, generator=g), y=torch.zeros(n, dtype=torch.long),
                    edge_index=torch.randint(0, n, (2, 600), generator=g), num_nodes=n)
        eli = data.edge_index[:, :64]
        labels = torch.randint(0, 2, (64,), generator=g).float()
        for ns, lab in ((None, None), (None, labels), (("binary", 1), None), (("binary", 2.5), labels),
                        (("triplet", 1), None), (("triplet", 3), None)):
            with self.subTest(ns=ns, labels=lab is not None):
                input_id = torch.arange(10, 42)
                torch.manual_seed(7)
                out = self.pyg(eli, lab, input_id, n, ns)
                lo = ref.LinkNeighborLoader(data, [1], edge_label_index=eli, edge_label=lab,
                                            neg_sampling=None if ns is None else {"mode": ns[0], "amount": ns[1]},
                                            batch_size=32, generator=torch.Generator().manual_seed(1))
                torch.manual_seed(7)
                b = lo.sample(input_id)
                seeds = b.n_id[:b.num_sampled_nodes[0]]
                self.assertTrue(torch.equal(out.node, seeds))
                meta = out.metadata
                self.assertTrue(torch.equal(meta[0], b.input_id))
                if ns is None or ns[0] == "binary":
                    self.assertTrue(torch.equal(meta[1], b.edge_label_index))
                    if meta[2] is None:
                        self.assertNotIn("edge_label", b.keys())
                    else:
                        self.assertTrue(torch.equal(meta[2], b.edge_label))
                        self.assertEqual(meta[2].dtype, b.edge_label.dtype)
                else:
                    for i, k in ((1, "src_index"), (2, "dst_pos_index"), (3, "dst_neg_index")):
                        self.assertTrue(torch.equal(meta[i], b[k]), k)
