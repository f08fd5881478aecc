"""Start and stop a local ``streamsampler serve`` for the user."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np

from .client import Client


def find_binary(binary=None):
    """The streamsampler executable: ``binary``, else $STREAMSAMPLER_BIN,
    else ``streamsampler`` on PATH, else the repository's bin/."""
    if binary:
        b = os.fspath(binary)
        if os.path.isfile(b) and os.access(b, os.X_OK):
            return os.path.abspath(b)
        raise FileNotFoundError("streamsampler binary %r not found or not executable" % b)
    cands = []
    if os.environ.get("STREAMSAMPLER_BIN"):
        cands.append(os.environ["STREAMSAMPLER_BIN"])
    on_path = shutil.which("streamsampler")
    if on_path:
        cands.append(on_path)
    here = os.path.dirname(os.path.abspath(__file__))
    cands.append(os.path.join(here, "..", "..", "bin", "streamsampler"))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise FileNotFoundError(
        "streamsampler binary not found: pass binary=, set $STREAMSAMPLER_BIN, "
        "put it on PATH, or run `make build` (bin/streamsampler)")


def _env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


class LocalServer:
    """A ``streamsampler serve`` child process on a Unix socket.

    ``train`` is a node-id file or an array of node ids. ``rank`` and
    ``world_size`` default to $RANK and $WORLD_SIZE (torchrun), else 0
    and 1. ``socket`` defaults to a fresh path in a private temporary
    directory. Use as a context manager, or call ``start``/``stop``.
    """

    def __init__(self, graph, train, fanouts, batch_size, seed=0, socket=None,
                 rank=None, world_size=None, prepare_at=0.8, replace=False,
                 binary=None, extra_args=(), quiet=True, startup_timeout=600):
        self.binary = find_binary(binary)
        self.graph = os.fspath(graph)
        self.fanouts = [int(f) for f in fanouts]
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.rank = _env_int("RANK", 0) if rank is None else int(rank)
        self.world_size = _env_int("WORLD_SIZE", 1) if world_size is None else int(world_size)
        self.prepare_at = float(prepare_at)
        self.replace = replace
        self.extra_args = list(extra_args)
        self.quiet = quiet
        self.startup_timeout = startup_timeout
        self._tmp = tempfile.mkdtemp(prefix="streamsampler-")
        self.socket = os.fspath(socket) if socket else os.path.join(self._tmp, "rank%d.sock" % self.rank)
        if isinstance(train, (str, os.PathLike)):
            self.train = os.fspath(train)
        else:
            self.train = os.path.join(self._tmp, "train.txt")
            np.savetxt(self.train, np.asarray(train, dtype=np.int64).reshape(-1), fmt="%d")
        self.proc = None
        self.log_path = os.path.join(self._tmp, "serve.log")
        self.ready_line = None

    def args(self):
        a = [self.binary, "serve", "--graph", self.graph, "--train", self.train,
             "--fanouts", ",".join(map(str, self.fanouts)),
             "--batch-size", str(self.batch_size), "--seed", str(self.seed),
             "--socket", self.socket, "--prepare-at", repr(self.prepare_at),
             "--rank", str(self.rank), "--world-size", str(self.world_size)]
        if self.replace:
            a.append("--replace")
        if self.quiet:
            a.append("--quiet")
        return a + self.extra_args

    def start(self):
        """Start the server and wait until it has prepared its first epoch."""
        if self.proc is not None:
            return self
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(self.args(), stdout=subprocess.PIPE, stderr=log,
                                         stdin=subprocess.DEVNULL)
        finally:
            log.close()
        deadline = time.monotonic() + self.startup_timeout
        # The first stdout line is "ready ..." once the first epoch is
        # prepared; nothing else is printed on stdout.
        line = self.proc.stdout.readline().decode("utf-8", "replace").strip()
        if not line.startswith("ready"):
            self.proc.wait(timeout=max(1, deadline - time.monotonic()))
            self.proc.stdout.close()
            err = self.log()
            self._cleanup()
            raise RuntimeError("streamsampler serve exited with status %s: %s" % (self.proc.returncode, err.strip()))
        self.ready_line = line
        return self

    def log(self):
        """What the server wrote on stderr so far."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def client(self, **kw):
        """A new Client connected to this server."""
        return Client(self.socket, **kw)

    def stop(self, timeout=30):
        """SIGTERM, then wait (SIGKILL after ``timeout`` seconds); returns
        the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        code = self.proc.returncode
        self._cleanup()
        return code

    def _cleanup(self):
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def serve_local(graph, train, fanouts, batch_size, **kw):
    """Start a LocalServer (see its arguments) and return it, ready."""
    return LocalServer(graph, train, fanouts, batch_size, **kw).start()
