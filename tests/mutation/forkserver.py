"""Run each mutant's tests in a fork of a process that has already imported TensorFlow.

Importing TensorFlow, Keras and gymnasium takes 5-20 s here, the tests of a loss module well
under one: without this, a module's mutants cost their imports 20 times over. The server
imports the heavy libraries (never rlbase, so each fork imports the mutated module fresh),
executes no TensorFlow op (its thread pools start in the fork, after the fork), and forks one
child per request, which runs pytest in the request's folder and exits with pytest's status.

    python forkserver.py serve SOCKET                  # the server (mutate.py starts it)
    python forkserver.py run SOCKET TIMEOUT -- ARGS    # one pytest run: prints its output,
                                                       # exits with its status
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import tempfile
import time

PRELOAD = ("numpy", "scipy", "tensorflow", "keras", "gymnasium", "pytest")


def serve(path: str) -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional one (scipy) missing only costs its import per run
            pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            request = json.loads(_read(conn))
            rc, output = _fork_pytest(request)
            conn.sendall(json.dumps({"rc": rc, "output": output}).encode())


def _read(conn: socket.socket) -> bytes:
    chunks = []
    while not (chunks and chunks[-1].endswith(b"\n")):
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _fork_pytest(request: dict) -> tuple[int, str]:
    with tempfile.TemporaryFile("w+") as out:
        pid = os.fork()
        if pid == 0:  # the child: the request's folder first on the path, pytest's status out
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                os.chdir(request["cwd"])
                sys.path.insert(0, request["cwd"])
                import pytest

                code = int(pytest.main(request["args"]))
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.time() + float(request["timeout"])
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.time() > deadline:  # a mutant that loops forever counts as killed
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                rc = -signal.SIGKILL
                break
            time.sleep(0.02)
        out.seek(0)
        return rc, out.read()[-20000:]


def run(path: str, timeout: float, args: list[str]) -> int:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    request = {"cwd": os.getcwd(), "args": args, "timeout": timeout}
    client.sendall(json.dumps(request).encode() + b"\n")
    chunks = []
    while chunk := client.recv(65536):
        chunks.append(chunk)
    reply = json.loads(b"".join(chunks))
    sys.stdout.write(reply["output"])
    return 0 if reply["rc"] == 0 else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        split = sys.argv.index("--")
        sys.exit(run(sys.argv[2], float(sys.argv[3]), sys.argv[split + 1:]))
