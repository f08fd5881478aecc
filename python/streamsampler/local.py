"""Start and stop a local ``streamsampler serve`` for the user."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import IO, Any, Iterable, Optional, Sequence, Union, cast

import numpy as np

from .client import Client
from .executables import find_binary
from .typing import PathArg, TrainNodes
from .wire import token_payload

__all__ = ["LocalServer", "env_int", "serve_local"]


def env_int(name: str, default: int) -> int:
    """The integer in environment variable ``name`` (torchrun's ``RANK``,
    ``WORLD_SIZE``), or ``default`` when it is unset or empty."""
    v = os.environ.get(name)
    return int(v) if v else default


class LocalServer:
    """A ``streamsampler serve`` child process on a Unix socket.

    ``train`` is a node-id file or an array of node ids. ``rank`` and
    ``world_size`` default to $RANK and $WORLD_SIZE (torchrun), else 0
    and 1. ``socket`` defaults to a fresh path in a private temporary
    directory. ``tcp`` (a loopback "HOST:PORT"; port 0 picks one, see
    ``tcp_address``) also listens on TCP, which needs ``token``: the
    server then requires it on every connection, and ``client()``
    presents it. Use as a context manager, or call ``start``/``stop``.
    """

    def __init__(self, graph: PathArg, train: TrainNodes, fanouts: Sequence[int], batch_size: int,
                 seed: int = 0, socket: Optional[PathArg] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None, prepare_at: float = 0.8, replace: bool = False,
                 binary: Optional[PathArg] = None, extra_args: Iterable[str] = (), quiet: bool = True,
                 startup_timeout: float = 600, tcp: Optional[str] = None,
                 token: Optional[Union[str, bytes]] = None) -> None:
        self.binary = find_binary(binary)
        self.graph = os.fspath(graph)
        self.fanouts = [int(f) for f in fanouts]
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.rank = env_int("RANK", 0) if rank is None else int(rank)
        self.world_size = env_int("WORLD_SIZE", 1) if world_size is None else int(world_size)
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
        self.tcp = tcp
        self.token = token
        self.token_file: Optional[str] = None
        if token is not None:
            # In the private (0700) directory, readable by its owner only.
            self.token_file = os.path.join(self._tmp, "token")
            fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(token_payload(token))
        #: The TCP address the server listens on ("tcp:HOST:PORT", for
        #: Client), once started with ``tcp``.
        self.tcp_address: Optional[str] = None
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.log_path = os.path.join(self._tmp, "serve.log")
        self.ready_line: Optional[str] = None

    def args(self) -> list[str]:
        """The command line that starts the server."""
        a = [self.binary, "serve", "--graph", self.graph, "--train", self.train,
             "--fanouts", ",".join(map(str, self.fanouts)),
             "--batch-size", str(self.batch_size), "--seed", str(self.seed),
             "--socket", self.socket, "--prepare-at", repr(self.prepare_at),
             "--rank", str(self.rank), "--world-size", str(self.world_size)]
        if self.tcp is not None:
            a += ["--tcp", self.tcp]
        if self.token_file is not None:
            a += ["--token-file", self.token_file]
        if self.replace:
            a.append("--replace")
        if self.quiet:
            a.append("--quiet")
        return a + self.extra_args

    def start(self) -> LocalServer:
        """Start the server and wait until it has prepared its first epoch."""
        if self.proc is not None:
            return self
        log = open(self.log_path, "wb")
        try:
            proc = self.proc = subprocess.Popen(self.args(), stdout=subprocess.PIPE, stderr=log,
                                                stdin=subprocess.DEVNULL)
        finally:
            log.close()
        out = cast(IO[bytes], proc.stdout)  # a pipe: stdout=PIPE
        deadline = time.monotonic() + self.startup_timeout
        # The first stdout line is "ready ..." once the first epoch is
        # prepared; nothing else is printed on stdout.
        line = out.readline().decode("utf-8", "replace").strip()
        if not line.startswith("ready"):
            proc.wait(timeout=max(1, deadline - time.monotonic()))
            out.close()
            err = self.log()
            self._cleanup()
            raise RuntimeError("streamsampler serve exited with status %s: %s" % (proc.returncode, err.strip()))
        self.ready_line = line
        for word in line.split():
            if word.startswith("tcp:"):
                self.tcp_address = word
        return self

    def log(self) -> str:
        """What the server wrote on stderr so far."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def client(self, **kw: Any) -> Client:
        """A new Client connected to this server's socket (presenting its
        token, if it has one)."""
        if self.token is not None:
            kw.setdefault("token", self.token)
        return Client(self.socket, **kw)

    def stop(self, timeout: float = 30) -> Optional[int]:
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
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        code = self.proc.returncode
        self._cleanup()
        return code

    def _cleanup(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_local(graph: PathArg, train: TrainNodes, fanouts: Sequence[int], batch_size: int,
                **kw: Any) -> LocalServer:
    """Start a LocalServer (see its arguments) and return it, ready."""
    return LocalServer(graph, train, fanouts, batch_size, **kw).start()
