"""Every public function and method of the package is annotated (PEP
484), and the annotations resolve, so type checkers and IDEs see them."""

import inspect
import types
import typing
import unittest

import streamsampler
from streamsampler import datasets, dgl, executables, featstore, loader, pyg, shm, streams, wire
from streamsampler.loader import device


def public_callables():
    """(qualified name, function) of what the package exports, the
    dataset loaders, the executables search, the feature-store reader,
    the wire codec, the shared buffers, the streams and the loaders (their
    device transfer too), with public methods."""
    seen = {}
    for mod, names in ((streamsampler, streamsampler.__all__),
                       (datasets, ["Dataset", "dataset_root", "load", "load_planetoid", "load_musae_facebook",
                                   "prepare", "find_chunkify", "undirected_unique", "write_ids", "main"]),
                       (executables, ["find_executable", "find_checkout", "is_checkout", "find_chunkify",
                                      "bundled_dir"]),
                       (featstore, ["FeatureStore", "crc32c", "graph_fingerprint"]),
                       (wire, ["decode_blocks", "encode_blocks", "decode_error", "encode_frame",
                               "encode_array", "decode_array", "epoch_payload", "sample_payload"]),
                       (shm, ["SharedBuffers", "Registrar"]),
                       (streams, streams.__all__),
                       (device, device.__all__),
                       (loader, loader.__all__),
                       (pyg, ["NeighborLoader", "to_data"]),
                       (dgl, dgl.__all__)):
        for name in names:
            obj = getattr(mod, name)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr not in ("__init__", "__enter__", "__len__", "__iter__"):
                        continue
                    if isinstance(member, (classmethod, staticmethod)):
                        member = member.__func__
                    if isinstance(member, property):
                        member = member.fget
                    if inspect.isfunction(member):
                        seen["%s.%s" % (name, attr)] = member
            elif inspect.isfunction(obj):
                seen[name] = obj
    return seen


class Annotations(unittest.TestCase):
    def test_public_api_is_annotated(self):
        funcs = public_callables()
        self.assertGreater(len(funcs), 40)
        for qual, f in funcs.items():
            sig = inspect.signature(f)
            for p in sig.parameters.values():
                if p.name in ("self", "cls"):
                    continue
                self.assertIsNot(p.annotation, inspect.Parameter.empty, "%s: parameter %s" % (qual, p.name))
            self.assertIsNot(sig.return_annotation, inspect.Signature.empty, "%s: return" % qual)

    def test_annotations_resolve(self):
        # Names used only by type checkers (torch, dgl, numpy.typing) are
        # supplied, as a checker would, so that the rest must resolve.
        import numpy.typing as npt
        stand_ins = {"npt": npt, "torch": types.SimpleNamespace(Tensor=typing.Any),
                     "dgl": types.SimpleNamespace(DGLGraph=typing.Any), "Data": typing.Any}
        for qual, f in public_callables().items():
            ns = dict(f.__globals__)
            for k, v in stand_ins.items():
                ns.setdefault(k, v)
            try:
                typing.get_type_hints(f, globalns=ns)
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                self.fail("%s: %s: %s" % (qual, type(e).__name__, e))


if __name__ == "__main__":
    unittest.main()
