"""Stand-ins for the device loaders' tests on a machine without a GPU
(and without torch_geometric or dgl):

* :class:`LateStreams`: :class:`streamsampler.streams.Streams` whose
  copies run late: a copy is queued on the current stream and runs only
  when something waits for it (an event's ``synchronize``, a consumer's
  stream that waits for the event and then runs); device tensors start
  filled with poison; "page-locked" memory is what it handed out or was
  told is registered. A copy that runs after its source was overwritten,
  or a read that does not wait for its copy, shows as wrong values.
* :func:`fake_pyg` and :func:`fake_dgl`: modules with the little of
  ``torch_geometric.data.Data`` and ``dgl.create_block`` the loaders use.
"""

import threading
import types

import numpy as np
import torch

from streamsampler.streams import Event, Streams


class Stream:
    """A queue of operations that run only when asked (``run``)."""

    def __init__(self, name, lock):
        self.name = name
        self.ops = []
        self.done = 0
        self.lock = lock

    def run(self, upto=None):
        with self.lock:
            upto = len(self.ops) if upto is None else upto
            while self.done < upto:
                op, self.ops[self.done] = self.ops[self.done], None  # what it holds goes once it ran
                self.done += 1  # before: an op may run this stream again
                op()

    def __repr__(self):
        return "Stream(%s, %d/%d)" % (self.name, self.done, len(self.ops))


class LateEvent(Event):
    def __init__(self):
        self.stream = None
        self.at = 0

    def record(self, stream):
        self.stream, self.at = stream, len(stream.ops)

    def query(self):
        return self.stream is None or self.stream.done >= self.at

    def synchronize(self):
        if self.stream is not None:
            self.stream.run(self.at)


def poison(t):
    if t.dtype == torch.bool:
        return t.fill_(True)
    if t.is_floating_point():
        return t.fill_(float("nan"))
    if t.dtype == torch.uint8:
        return t.fill_(171)
    return t.fill_(-85)


class LateStreams(Streams):
    """See the module doc. ``compute`` is the consumer's stream (every
    thread's current stream outside ``use``); ``registered`` holds host
    ranges (addr, size) that count as page-locked."""

    asynchronous = True

    def __init__(self, device=None):
        super().__init__(torch.device("cpu") if device is None else device)
        self.lock = threading.RLock()
        self.compute = Stream("compute", self.lock)
        self.streams = [self.compute]
        self.local = threading.local()
        self.pinned_blocks = []
        self.registered = []
        self.recorded = {}  # id(obj) -> [streams]
        self.copies = 0

    def new_stream(self):
        s = Stream("side%d" % len(self.streams), self.lock)
        self.streams.append(s)
        return s

    def current_stream(self):
        return getattr(self.local, "stream", None) or self.compute

    def use(self, stream):
        outer = self

        class Use:
            def __enter__(self):
                self.prev = getattr(outer.local, "stream", None)
                outer.local.stream = stream

            def __exit__(self, *exc):
                outer.local.stream = self.prev

        return Use()

    def event(self):
        return LateEvent()

    def wait(self, stream, event):
        with self.lock:
            stream.ops.append(event.synchronize)

    def pinned(self, nbytes):
        t = torch.empty(nbytes, dtype=torch.uint8)
        self.pinned_blocks.append(t)
        return t

    def empty(self, shape, dtype):
        return poison(torch.empty(tuple(shape), dtype=dtype))

    def copy(self, dst, src):
        with self.lock:
            self.copies += 1
            self.current_stream().ops.append(lambda: dst.copy_(src))

    def record_stream(self, obj, stream):
        self.recorded.setdefault(id(obj), []).append(stream)
        if not torch.is_tensor(obj):
            obj.record_stream(stream)  # a (fake) DGL graph

    def is_pinned(self, t):
        p = t.data_ptr()
        ranges = [(b.data_ptr(), b.numel()) for b in self.pinned_blocks] + self.registered
        return any(a <= p < a + n for a, n in ranges)

    def run_all(self):
        for s in self.streams:
            s.run()

    def on_compute(self, fn):
        """Queue ``fn`` on the consumer's stream (a step of the model)."""
        with self.lock:
            self.compute.ops.append(fn)


def _recursive_apply(v, func):
    """PyG's recursive_apply: tensors, named tuples, sequences, mappings,
    and func on anything else (its errors ignored)."""
    if torch.is_tensor(v):
        return func(v)
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return type(v)(*(_recursive_apply(x, func) for x in v))
    if isinstance(v, (list, tuple)):
        return [_recursive_apply(x, func) for x in v]
    if isinstance(v, dict):
        return {k: _recursive_apply(x, func) for k, x in v.items()}
    try:
        return func(v)
    except Exception:
        return v


class Data:
    """The part of torch_geometric.data.Data the loaders use."""

    def __init__(self, **kw):
        object.__setattr__(self, "_store", dict(kw))

    def __setattr__(self, k, v):
        self._store[k] = v

    def __getattr__(self, k):
        try:
            return self.__dict__["_store"][k]
        except KeyError:
            raise AttributeError(k) from None

    def __setitem__(self, k, v):
        self._store[k] = v

    def __getitem__(self, k):
        return self._store[k]

    def keys(self):
        return list(self._store)

    @property
    def stores(self):
        return [self._store]

    def apply(self, func):
        for k, v in list(self._store.items()):
            self._store[k] = _recursive_apply(v, func)
        return self

    def to(self, device, non_blocking=False):
        return self.apply(lambda x: x.to(device, non_blocking=non_blocking) if torch.is_tensor(x) else x)

    def pin_memory(self, *args):
        return self.apply(lambda x: x.pin_memory(*args) if torch.is_tensor(x) else x)


def fake_pyg():
    """sys.modules entries for torch_geometric and torch_geometric.data."""
    pkg = types.ModuleType("torch_geometric")
    data = types.ModuleType("torch_geometric.data")
    data.Data = Data
    pkg.data = data
    return {"torch_geometric": pkg, "torch_geometric.data": data}


class Block:
    """The part of a DGL block the loaders use."""

    def __init__(self, src, dst, num_src_nodes, num_dst_nodes):
        self.edges = (src, dst)
        self.num_src, self.num_dst = num_src_nodes, num_dst_nodes
        self.srcdata, self.dstdata, self.edata = {}, {}, {}
        self.recorded = []

    @property
    def device(self):
        return self.edges[0].device

    def to(self, device, **kw):
        b = Block(self.edges[0].to(device), self.edges[1].to(device), self.num_src, self.num_dst)
        for mine, theirs in ((self.srcdata, b.srcdata), (self.dstdata, b.dstdata), (self.edata, b.edata)):
            theirs.update({k: v.to(device) for k, v in mine.items()})
        return b

    def record_stream(self, stream):
        self.recorded.append(stream)


def fake_dgl():
    """A sys.modules entry for dgl."""
    dgl = types.ModuleType("dgl")
    dgl.NID, dgl.EID = "_ID", "_ID"

    def create_block(edges, num_src_nodes, num_dst_nodes):
        src, dst = edges
        assert torch.is_tensor(src) and torch.is_tensor(dst)
        return Block(src, dst, num_src_nodes, num_dst_nodes)

    dgl.create_block = create_block
    dgl.DGLGraph = Block
    return {"dgl": dgl}


def block_arrays(blk):
    """A fake block's contents as numpy arrays, for comparisons."""
    out = {"src": blk.edges[0].numpy(), "dst": blk.edges[1].numpy(), "n": (blk.num_src, blk.num_dst)}
    for name, d in (("srcdata", blk.srcdata), ("dstdata", blk.dstdata), ("edata", blk.edata)):
        for k, v in d.items():
            out[name + "." + k] = v.numpy()
    return out


def assert_same(tc, a, b, what=""):
    """Two nested structures of tensors / arrays / plain values are equal."""
    if torch.is_tensor(a) or isinstance(a, np.ndarray):
        a = a.cpu().numpy() if torch.is_tensor(a) else a
        b = b.cpu().numpy() if torch.is_tensor(b) else b
        np.testing.assert_array_equal(a, b, err_msg=what)
        tc.assertEqual(a.dtype, b.dtype, what)
    elif isinstance(a, dict):
        tc.assertEqual(sorted(a), sorted(b), what)
        for k in a:
            assert_same(tc, a[k], b[k], "%s.%s" % (what, k))
    elif isinstance(a, (list, tuple)):
        tc.assertEqual(len(a), len(b), what)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(tc, x, y, "%s[%d]" % (what, i))
    elif isinstance(a, Data):
        assert_same(tc, a._store, b._store, what)
    elif isinstance(a, Block):
        assert_same(tc, block_arrays(a), block_arrays(b), what)
    elif isinstance(a, HeteroData):
        tc.assertEqual((a.node_types, a.edge_types), (b.node_types, b.edge_types), what)
        for t in a.node_types + a.edge_types:
            assert_same(tc, a[t]._store, b[t]._store, "%s[%s]" % (what, t))
    elif isinstance(a, HeteroBlock):
        assert_same(tc, hetero_block_arrays(a), hetero_block_arrays(b), what)
    else:
        tc.assertEqual(a, b, what)


def hetero_block_arrays(blk):
    """A fake heterograph block's contents as a dict, for comparisons."""
    out = {"types": (blk.srctypes, blk.dsttypes, blk.canonical_etypes)}
    for et in blk.canonical_etypes:
        out["edges%s" % (et,)] = list(blk.edges_of(et))
        out["data%s" % (et,)] = blk.edges[et].data
    for t in blk.srctypes:
        out["src." + t] = (blk.num_src_nodes(t), blk.srcnodes[t].data)
    for t in blk.dsttypes:
        out["dst." + t] = (blk.num_dst_nodes(t), blk.dstnodes[t].data)
    return out


def fake_pyg_nn():
    """sys.modules entries for torch_geometric (with .data and .nn) where
    ``torch_geometric.nn.SAGEConv`` is PyG's SAGEConv with its defaults
    written in plain torch (mean of the in-neighbors through ``lin_l``,
    with bias, plus the node itself through ``lin_r``, without), and
    ``Data`` has ``num_features``: enough for python/examples/pyg_sage.py."""
    import torch.nn as nn

    class SAGEConv(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.lin_l = nn.Linear(in_channels, out_channels, bias=True)
            self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

        def forward(self, x, edge_index):
            src, dst = edge_index[0], edge_index[1]
            agg = torch.zeros_like(x).index_add_(0, dst, x[src])
            deg = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device).index_add_(
                0, dst, torch.ones(dst.shape[0], dtype=x.dtype, device=x.device))
            return self.lin_l(agg / deg.clamp(min=1).unsqueeze(1)) + self.lin_r(x)

    class FeatureData(Data):
        @property
        def num_features(self):
            return self.x.shape[1]

    mods = fake_pyg()
    mods["torch_geometric.data"].Data = FeatureData
    nn_mod = types.ModuleType("torch_geometric.nn")
    nn_mod.SAGEConv = SAGEConv
    mods["torch_geometric"].nn = nn_mod
    mods["torch_geometric.nn"] = nn_mod
    return mods


class Storage(Data):
    """One node or edge storage of a fake HeteroData: an attribute bag
    (``keys()``, item access) as PyG's NodeStorage / EdgeStorage."""


class HeteroData:
    """The part of torch_geometric.data.HeteroData the heterogeneous
    loader and from_pyg use: ``data[node_type]`` / ``data[edge_type]``
    storages made on first access, ``node_types`` / ``edge_types`` in order
    of creation, ``to`` and ``x_dict`` / ``edge_index_dict``."""

    def __init__(self):
        self._nodes = {}
        self._edges = {}

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self._edges.setdefault(tuple(key), Storage())
        return self._nodes.setdefault(key, Storage())

    @property
    def node_types(self):
        return list(self._nodes)

    @property
    def edge_types(self):
        return list(self._edges)

    @property
    def x_dict(self):
        return {t: s.x for t, s in self._nodes.items() if "x" in s.keys()}

    @property
    def edge_index_dict(self):
        return {et: s.edge_index for et, s in self._edges.items()}

    @property
    def stores(self):
        return [s._store for s in list(self._nodes.values()) + list(self._edges.values())]

    def apply(self, func):
        for s in list(self._nodes.values()) + list(self._edges.values()):
            s.apply(func)
        return self

    def to(self, device, non_blocking=False):
        return self.apply(lambda x: x.to(device, non_blocking=non_blocking) if torch.is_tensor(x) else x)


def fake_pyg_hetero():
    """sys.modules entries for torch_geometric and torch_geometric.data
    with both Data and HeteroData."""
    mods = fake_pyg()
    mods["torch_geometric.data"].HeteroData = HeteroData
    return mods


class _Frame:
    """A fake DGL node or edge space: its ``data`` dict."""

    def __init__(self):
        self.data = {}


class _Frames:
    """``block.srcnodes`` / ``dstnodes`` / ``edges`` of a fake heterograph
    block: a frame per type, KeyError for a type the block lacks."""

    def __init__(self, types):
        self._f = {t: _Frame() for t in types}

    def __getitem__(self, t):
        return self._f[t]


class HeteroBlock:
    """The part of a DGL heterograph block (dgl.create_block with a dict)
    the heterogeneous loader uses: ``srctypes``, ``dsttypes``,
    ``canonical_etypes``, ``srcnodes[t].data``, ``dstnodes[t].data``,
    ``edges[etype].data``, ``num_src_nodes(t)``, ``num_dst_nodes(t)``, the
    edges per etype (``edges_of``), and ``srcdata[k]`` / ``dstdata[k]``
    as DGL answers them for several types (a dict by type)."""

    def __init__(self, data_dict, num_src_nodes, num_dst_nodes):
        for et, (s, d) in data_dict.items():
            assert torch.is_tensor(s) and torch.is_tensor(d) and s.dtype == d.dtype == torch.int64, et
            assert len(s) == len(d), et
            assert len(s) == 0 or (int(s.max()) < num_src_nodes[et[0]] and int(d.max()) < num_dst_nodes[et[2]]), et
        self.canonical_etypes = list(data_dict)
        # DGL's create_block: the types of the dicts and of the edge types.
        self.srctypes = sorted(set(num_src_nodes) | {et[0] for et in data_dict})
        self.dsttypes = sorted(set(num_dst_nodes) | {et[2] for et in data_dict})
        self._edges = {et: (s, d) for et, (s, d) in data_dict.items()}
        self._nsrc, self._ndst = dict(num_src_nodes), dict(num_dst_nodes)
        self.srcnodes, self.dstnodes = _Frames(self.srctypes), _Frames(self.dsttypes)
        self.edges = _Frames(self.canonical_etypes)
        self.recorded = []

    def edges_of(self, et):
        return self._edges[et]

    @property
    def device(self):
        for s, _ in self._edges.values():
            return s.device
        return torch.device("cpu")

    def to(self, device, **kw):
        b = HeteroBlock({et: (s.to(device), d.to(device)) for et, (s, d) in self._edges.items()}, self._nsrc,
                        self._ndst)
        for mine, theirs in ((self.srcnodes, b.srcnodes), (self.dstnodes, b.dstnodes), (self.edges, b.edges)):
            for t, f in mine._f.items():
                theirs._f[t].data.update({k: v.to(device) for k, v in f.data.items()})
        return b

    def record_stream(self, stream):
        self.recorded.append(stream)

    def num_src_nodes(self, t):
        return self._nsrc.get(t, 0)

    def num_dst_nodes(self, t):
        return self._ndst.get(t, 0)

    @property
    def srcdata(self):
        return _ByType(self.srcnodes, self.srctypes)

    @property
    def dstdata(self):
        return _ByType(self.dstnodes, self.dsttypes)


class _ByType:
    def __init__(self, frames, types):
        self.frames, self.types = frames, types

    def __getitem__(self, k):
        return {t: self.frames[t].data[k] for t in self.types if k in self.frames[t].data}


def fake_dgl_hetero():
    """A sys.modules entry for dgl whose create_block also takes a dict of
    edge types (heterograph blocks, :class:`HeteroBlock`)."""
    mods = fake_dgl()
    dgl = mods["dgl"]
    homogeneous = dgl.create_block

    def create_block(edges, num_src_nodes=None, num_dst_nodes=None):
        if isinstance(edges, dict):
            return HeteroBlock(edges, num_src_nodes, num_dst_nodes)
        return homogeneous(edges, num_src_nodes, num_dst_nodes)

    dgl.create_block = create_block
    return mods
