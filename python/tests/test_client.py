"""Client error paths and pipelining against a scripted fake server."""

import os
import socket
import struct
import tempfile
import threading
import unittest

import numpy as np

from streamsampler import Client, Loader, NotInFrontierError, ProtocolError, ServerError
from streamsampler import protocol as P
from streamsampler import wire as W

from .test_protocol import make_batch


class FakeServer:
    """Accepts one connection and answers each request with
    ``script(op, rid, payload)``: a list of raw reply bytes (possibly
    several, or none; a None item closes the connection there), or None
    to close the connection."""

    def __init__(self, script):
        self.script = script
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "fake.sock")
        self.ln = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.ln.bind(self.path)
        self.ln.listen(1)
        self.requests = []
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _recv(self, c, n):
        buf = b""
        while len(buf) < n:
            chunk = c.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def _run(self):
        c, _ = self.ln.accept()
        with c:
            while True:
                h = self._recv(c, W.HEADER_SIZE)
                if h is None:
                    return
                length, op, _, rid = W.HEADER.unpack(h)
                payload = self._recv(c, length - 6)
                self.requests.append((op, rid, payload))
                out = self.script(op, rid, payload)
                if out is None:
                    return
                for frame in out:
                    if frame is None:  # close after what was sent
                        return
                    c.sendall(frame)

    def close(self):
        self.ln.close()
        self.t.join(5)
        os.unlink(self.path)
        os.rmdir(self.dir)


def info_reply(rid, op=P.OP_EPOCH_INFO, **kw):
    import json
    obj = {"epoch": 0, "num_batches": 3, "served": 0}
    obj.update(kw)
    return W.encode_frame(op, rid, json.dumps(obj).encode())


def error_reply(op, rid, code, msg):
    return W.encode_frame(op, rid, struct.pack("<H", code) + msg.encode(), status=P.STATUS_ERROR)


class ClientErrors(unittest.TestCase):
    def run_fake(self, script):
        srv = FakeServer(script)
        self.addCleanup(srv.close)
        c = Client(srv.path, timeout=10)
        self.addCleanup(c.close)
        return srv, c

    def test_error_reply_classes(self):
        def script(op, rid, payload):
            if op == P.OP_SAMPLE:
                return [error_reply(op, rid, P.CODE_NOT_IN_FRONTIER, "seed 3 is not a training node")]
            return [error_reply(op, rid, P.CODE_UNKNOWN_EPOCH, "unknown epoch 9")]
        srv, c = self.run_fake(script)
        with self.assertRaises(NotInFrontierError) as cm:
            c.sample([3])
        self.assertIn("seed 3", str(cm.exception))
        with self.assertRaises(ServerError) as cm:
            c.next_batch(9)
        self.assertEqual(cm.exception.code, P.CODE_UNKNOWN_EPOCH)
        # The connection stays usable after error replies.
        with self.assertRaises(ServerError):
            c.advance(9)
        self.assertEqual([r[0] for r in srv.requests], [P.OP_SAMPLE, P.OP_NEXT_BATCH, P.OP_ADVANCE])
        self.assertEqual(srv.requests[1][2], struct.pack("<I", 9))
        self.assertEqual(srv.requests[2][2], struct.pack("<I", 9))

    def test_closed_mid_reply(self):
        srv, c = self.run_fake(lambda op, rid, p: [W.encode_blocks(make_batch(), op, rid)[:25], None])
        with self.assertRaises(ConnectionError):
            c.next_batch()

    def test_closed_before_reply(self):
        srv, c = self.run_fake(lambda op, rid, p: None)
        with self.assertRaises(ConnectionError):
            c.epoch_info()

    def test_malformed_replies(self):
        replies = iter([
            lambda op, rid: W.encode_frame(op, rid, b"\x01\x02"),                # short blocks
            lambda op, rid: W.encode_frame(P.OP_SAMPLE, rid, b""),               # wrong op
            lambda op, rid: W.encode_frame(op, rid, b"", status=7),              # bad status
            lambda op, rid: struct.pack("<IBBI", 2, op, 0, rid),                 # length below header
        ])
        srv, c = self.run_fake(lambda op, rid, p: [next(replies)(op, rid)])
        with self.assertRaises(ProtocolError):
            c.next_batch()
        with self.assertRaises(ProtocolError):
            c.next_batch()
        with self.assertRaises(ProtocolError):
            c.next_batch()
        with self.assertRaises(ProtocolError):
            c.next_batch()

    def test_connection_level_error(self):
        # An error reply with id 0 (the server could not read the request
        # header: too large) fails the waiting request.
        srv, c = self.run_fake(lambda op, rid, p: [error_reply(0, 0, P.CODE_TOO_LARGE, "frame too large")])
        with self.assertRaises(ServerError) as cm:
            c.sample(np.arange(10))
        self.assertEqual(cm.exception.code, P.CODE_TOO_LARGE)

    def test_no_server(self):
        with self.assertRaises(OSError):
            Client(os.path.join(tempfile.gettempdir(), "no-such-streamsampler.sock"))
        with self.assertRaises(ValueError):
            Client("tcp://nohostport")


    def test_epoch_stats(self):
        """epoch_stats picks the epoch asked for from epoch_info: the
        current one's stats, the one before's previous_stats, None for
        another epoch or from a server without them (an older one)."""
        replies = iter([
            dict(epoch=4, stats={"epoch": 4, "batches": 2}, previous_stats={"epoch": 3, "batches": 7}),
        ] * 4 + [dict(epoch=4)] * 2)

        def script(op, rid, payload):
            return [info_reply(rid, **next(replies))]
        srv, c = self.run_fake(script)
        self.assertEqual(c.epoch_stats(), {"epoch": 4, "batches": 2})
        self.assertEqual(c.epoch_stats(4), {"epoch": 4, "batches": 2})
        self.assertEqual(c.epoch_stats(3), {"epoch": 3, "batches": 7})
        self.assertIsNone(c.epoch_stats(2))
        self.assertIsNone(c.epoch_stats())
        self.assertIsNone(c.epoch_stats(4))
        self.assertEqual([r[0] for r in srv.requests], [P.OP_EPOCH_INFO] * 6)


class Pipelining(unittest.TestCase):
    def test_out_of_order_replies_yield_in_request_order(self):
        """The fake holds next_batch replies and sends them in reverse
        pairs; batches() must still yield in request order, and an
        epoch_info issued from the loop body must not steal a reply."""
        held = []
        count = {"n": 0}

        def script(op, rid, payload):
            if op == P.OP_EPOCH_INFO:
                return [info_reply(rid, epoch=4)]
            if op == P.OP_ADVANCE:
                return [info_reply(rid, op=op, epoch=5)]
            if count["n"] >= 6:
                return [W.encode_frame(op, rid, struct.pack("<I", 4), status=P.STATUS_END)] + held[::-1]
            b = make_batch()
            b.epoch, b.index = 4, count["n"]
            count["n"] += 1
            held.append(W.encode_blocks(b, op, rid))
            if len(held) == 2:
                out = held[::-1]
                held.clear()
                return out
            return []
        srv = FakeServer(script)
        self.addCleanup(srv.close)
        with Client(srv.path, timeout=10) as c:
            got = []
            for b in c.batches(depth=3):
                got.append(b.index)
                self.assertEqual(c.epoch_info()["epoch"], 4)
            self.assertEqual(got, list(range(6)))
        ops = [r[0] for r in srv.requests]
        self.assertEqual(ops[-1], P.OP_ADVANCE)
        self.assertEqual(srv.requests[-1][2], struct.pack("<I", 4))

    def test_loader_propagates_errors(self):
        def script(op, rid, payload):
            if op == P.OP_EPOCH_INFO:
                return [info_reply(rid)]
            return [error_reply(op, rid, P.CODE_INTERNAL, "preparing epoch 1: disk on fire")]
        srv = FakeServer(script)
        self.addCleanup(srv.close)
        with Client(srv.path, timeout=10) as c:
            with self.assertRaises(ServerError) as cm:
                for _ in Loader(c):
                    pass
            self.assertIn("disk on fire", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
