"""The protocol of docs/PROTOCOL.md, by name: op codes, statuses, error
codes, dtypes and flags, and the exceptions an error reply raises.

serve/python_protocol_test.go reads this file: its ``OP_*``,
``STATUS_*`` and ``CODE_*`` constants and its ``DTYPES`` table must match
serve/protocol.go's (same names, same values). The bytes are
:mod:`streamsampler.wire`'s, the minibatch model
:mod:`streamsampler.batch`'s, the shared-rows buffers
:mod:`streamsampler.shm`'s.
"""

from __future__ import annotations

from typing import Any, Dict, Type

import numpy as np

OP_EPOCH_INFO = 1
OP_NEXT_BATCH = 2
OP_SAMPLE = 3
OP_ADVANCE = 4
OP_HELLO = 5  # payload: the token; the first request where the server requires one
OP_MAP_ROWS = 6  # empty: from then on feature rows come in memory files (Unix sockets)
OP_SPLIT = 7  # u32 batch size, array nodes: register a node list served beside training
OP_SPLIT_BATCH = 8  # u32 split, u32 index[, u8 semantics]: one of its minibatches
OP_WALKS = 9  # a walk configuration and array starts: random walks, i32 [walks, length+1]
OP_DROP_SPLIT = 10  # u32 split: forget a split, giving back the memory it holds
OP_SAMPLE_FRESH = 11  # u64 seed, u32 epoch, u8 flags, array fanouts, array seeds[, u8 semantics]: random reads
# Full scans, the passes of layer-wise inference (docs/PROTOCOL.md, "Full scans"):
OP_SCAN = 16  # u32 batch size, u8 flags, u8 semantics, UTF-8 store path: open a pass over every node
OP_SCAN_BATCH = 17  # u32 scan, u32 index: one of its minibatches (one hop, every in-neighbor)
OP_DROP_SCAN = 18  # u32 scan: close a scan
OP_LINK_SPLIT = 19  # u32 batch size, u8 mode, f64 amount, u64 seed, u8 flags, arrays src, dst[, labels]: a link split
#: Flags of a scan request: the minibatches carry their nodes' rows (and
#: the seeds' labels); their edge ids.
SCAN_ROWS = 1
SCAN_EDGE_IDS = 2

#: Walk modes of a walks request (walk.Mode).
WALK_MODES = {"deepwalk": 0, "ppr": 1, "node2vec": 2}

#: The protocol version this client speaks (epoch_info's "protocol").
PROTOCOL = 4

#: A request's semantics byte (docs/PROTOCOL.md): left out, the server's.
SEMANTICS = {"dgl": 0, "pyg": 1}
#: Minibatch flags, the byte after a minibatch's hop count.
BATCH_PYG = 1
BATCH_EDGE_IDS = 2
BATCH_LINK = 4  # link fields follow the last hop, before the features (docs/PROTOCOL.md, "Link minibatches")
BATCH_HETERO_X = 16  # with BATCH_HETERO: per node type feature rows follow
BATCH_HETERO = 8  # a heterogeneous minibatch (docs/PROTOCOL.md, "Heterogeneous minibatches"; streamsampler.hetero)
BATCH_HETERO_Y = 32  # with BATCH_HETERO: per node type labels follow (after the rows, if any)
#: sample_fresh request flags.
FRESH_REPLACE = 1
FRESH_EDGE_IDS = 2

STATUS_OK = 0
STATUS_ERROR = 1
STATUS_END = 2

CURRENT_EPOCH = 0xFFFFFFFF
NO_BATCH = -1

# The error codes of a STATUS_ERROR reply: the Code* constants of
# serve/protocol.go and the table of docs/PROTOCOL.md, same names and
# values (serve/python_protocol_test.go checks all three agree).
CODE_BAD_REQUEST = 1      # malformed payload or frame
CODE_UNKNOWN_OP = 2
CODE_UNKNOWN_EPOCH = 3    # neither the current epoch nor a prepared next one
CODE_NOT_IN_FRONTIER = 4  # a sample seed is not a training node of this epoch's shard
CODE_EPOCH_NOT_DONE = 5   # next_batch for epoch e+1 while epoch e has minibatches left
CODE_INTERNAL = 6         # preparing the epoch or assembling a minibatch failed
CODE_SHUTTING_DOWN = 7
CODE_TOO_LARGE = 8        # the request exceeds the server's cap; the connection is closed
CODE_DUPLICATE_SEED = 9   # a sample request names a seed twice
CODE_UNAUTHORIZED = 10    # no hello with the server's token first; the connection is closed
CODE_OVER_BUDGET = 11     # the reply could exceed the connection's share of the in-flight budget
CODE_UNKNOWN_SPLIT = 12   # split_batch or drop_split names a split the server does not have
CODE_TIMED_OUT = 13       # a walks request ran past the server's bound (--walk-timeout) and was stopped
CODE_UNKNOWN_SCAN = 16    # scan_batch or drop_scan names a scan this connection does not have

#: The environment variable that holds the token, for the server and clients.
TOKEN_ENV = "STREAMSAMPLER_TOKEN"
#: The longest token a hello may carry, in bytes.
MAX_TOKEN = 1024

DTYPES: Dict[int, np.dtype[Any]] = {
    1: np.dtype("<u4"),
    2: np.dtype("<i4"),
    3: np.dtype("<i8"),
    4: np.dtype("<u8"),
    5: np.dtype("<f4"),
    6: np.dtype("<f2"),
    7: np.dtype("<i1"),
    8: np.dtype("<u1"),
}
DTYPE_CODES: Dict[np.dtype[Any], int] = {v: k for k, v in DTYPES.items()}

#: Largest reply the client accepts (the server's replies are minibatches).
MAX_REPLY = 1 << 30

#: Feature flags: the byte before a reply's feature arrays.
FEATURE_X = 1
FEATURE_Y = 2
FEATURE_SHARED = 4  # x's bytes are in a shared buffer (its location after x's header)
#: The dtypes feature rows come in.
FEATURE_DTYPES = (np.dtype("<f4"), np.dtype("<f2"), np.dtype("<i1"), np.dtype("<u1"))

#: Where a shared-rows reply retires no buffer.
NO_BUFFER = 0xFFFFFFFF


class ProtocolError(Exception):
    """A reply that does not follow the protocol."""


class ServerError(Exception):
    """An error reply: ``code`` is one of the CODE_* constants."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__("server error %d: %s" % (code, message))
        self.code = code
        self.message = message


class UnknownEpochError(ServerError):
    """The epoch asked for is neither current nor a prepared next one."""


class NotInFrontierError(ServerError, KeyError):
    """A seed is not a training node of this epoch's shard."""


class UnauthorizedError(ServerError, PermissionError):
    """The server requires a token and got none, or a wrong one; it has
    closed the connection."""


#: The exception class of an error code (ServerError for the others).
ERROR_CLASSES: Dict[int, Type[ServerError]] = {
    CODE_UNKNOWN_EPOCH: UnknownEpochError,
    CODE_NOT_IN_FRONTIER: NotInFrontierError,
    CODE_UNAUTHORIZED: UnauthorizedError,
}


def error_class(code: int) -> Type[ServerError]:
    """The ServerError subclass an error reply of ``code`` raises."""
    return ERROR_CLASSES.get(code, ServerError)
