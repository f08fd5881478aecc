"""The convergence script's reference sampler (plain torch) samples what
it claims: min(degree, fanout) distinct true neighbors per destination,
with the block structure of DESIGN §5. Skipped without torch."""

import importlib.util
import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


@unittest.skipUnless(importlib.util.find_spec("torch"),
                     "torch is not importable (Debian: python3-torch; scripts/deps.sh installs it)")
class RefSampler(unittest.TestCase):
    def test_uniform_without_replacement(self):
        import torch
        sys.path.insert(0, os.path.join(HERE, ".."))
        from convergence import RefSampler

        rng = np.random.default_rng(1)
        n = 300
        u, v = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
        keep = u < v
        e = np.unique(np.stack([u[keep], v[keep]], 1), axis=0)
        adj = [set() for _ in range(n)]
        for a, b in e.tolist():
            adj[a].add(b)
            adj[b].add(a)
        fan = [5, 3]
        s = RefSampler(n, e, fan, torch.Generator().manual_seed(0))
        seeds = torch.tensor([3, 77, 150, 299, 0])
        hops, n_id = s.sample(seeds)
        dst = seeds
        for h, (ei, (ns, nd)) in enumerate(hops):
            self.assertEqual(nd, len(dst))
            src = n_id[:ns]
            self.assertTrue(torch.equal(src[:nd], dst))
            self.assertEqual(len(torch.unique(src)), ns)
            for i, d in enumerate(dst.tolist()):
                nb = src[ei[0][ei[1] == i]].tolist()
                self.assertEqual(len(nb), min(len(adj[d]), fan[h]))
                self.assertEqual(len(set(nb)), len(nb))
                self.assertTrue(set(nb) <= adj[d])
            dst = src
        # Uniformity: a hub's sampled neighbors over many draws.
        hub = max(range(n), key=lambda i: len(adj[i]))
        counts = {}
        g = RefSampler(n, e, [3], torch.Generator().manual_seed(3))
        for _ in range(1000):
            hops, nid = g.sample(torch.tensor([hub]))
            for x in nid[hops[0][0][0]].tolist():
                counts[x] = counts.get(x, 0) + 1
        deg = len(adj[hub])
        expect = 1000 * 3 / deg
        chi2 = sum((counts.get(x, 0) - expect) ** 2 / expect for x in adj[hub])
        # deg-1 degrees of freedom; 99.9% quantile is well below 3*(deg-1)+30.
        self.assertLess(chi2, 3 * (deg - 1) + 30, "chi-square %.1f over %d neighbors" % (chi2, deg))


if __name__ == "__main__":
    unittest.main()
