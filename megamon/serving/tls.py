"""The TLS side of secure ``/metrics``: a server certificate from files, or a self-signed one.

With ``MetricsTLS`` the scraper sends a bearer token, which must never cross the network in
clear, so ``/metrics`` is served over TLS. As in the Go megamon (controller-runtime's secure
metrics server), the certificate comes either from files — typically a ``kubernetes.io/tls``
Secret mounted as ``tls.crt`` and ``tls.key`` — or, when none are given, from a self-signed
certificate made at start. A self-signed certificate only protects the token against passive
eavesdropping; its SHA-256 fingerprint is logged so that an operator can pin it, and a
certificate from files is what to use when Prometheus must verify the server.

Certificates from files are reloaded when the files change (cert-manager renews them and the
kubelet swaps the mounted Secret atomically), checked at each TLS handshake, so a renewal
needs no restart; a pair that does not load keeps the previous certificate in service.

The standard library's ``ssl`` loads certificates only from paths, so the generated key is
handed to it through an anonymous in-memory file (``memfd``), never the disk: pods commonly
run with a read-only root filesystem, and a private key has no business in ``/tmp``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import logging
import os
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from megamon.errors import ConfigError

log = logging.getLogger(__name__)

SELF_SIGNED_VALIDITY = dt.timedelta(days=365)
"""The generated certificate lives as long as the process; a year outlasts any pod."""
_CLOCK_SKEW = dt.timedelta(minutes=5)
"""``notBefore`` is back-dated so a scraper whose clock is a little behind still accepts it."""
_ALPN = ["http/1.1"]
"""The server speaks HTTP/1.x only; saying so spares clients an HTTP/2 attempt."""

_FileSignature = tuple[tuple[int, int, int], ...]
"""(inode, size, mtime) of the certificate and key files: changes when either is replaced."""


@dataclass(frozen=True, slots=True)
class Certificate:
    """The certificate being served, as an operator or a test needs to see it."""

    pem: bytes
    """The chain in PEM, server certificate first: what a client can trust or pin."""
    fingerprint: str
    """SHA-256 of the server certificate's DER, ``AB:CD:…`` as ``openssl x509 -fingerprint``."""
    not_after: dt.datetime
    names: tuple[str, ...]
    """The DNS names and IP addresses of its subjectAltName."""


def fingerprint(certificate: x509.Certificate) -> str:
    """SHA-256 fingerprint in the colon-separated upper-case form OpenSSL prints."""
    digest = certificate.fingerprint(hashes.SHA256())
    return ":".join(f"{byte:02X}" for byte in digest)


def default_hostnames() -> list[str]:
    """``localhost`` and this host's name, which in a pod is the pod's name."""
    names = ["localhost"]
    hostname = socket.gethostname()
    if hostname and hostname not in names:
        names.append(hostname)
    return names


def generate_self_signed(
    hostnames: Sequence[str],
    ip_addresses: Sequence[str] = ("127.0.0.1", "::1"),
    validity: dt.timedelta = SELF_SIGNED_VALIDITY,
) -> tuple[bytes, bytes]:
    """A fresh ECDSA P-256 key and a self-signed server certificate for it, both in PEM.

    The common name is the first host name; every host name and IP address is in the
    subjectAltName, which is what clients check. P-256 rather than RSA: generated in a
    millisecond at start and accepted by every TLS client Prometheus uses. The loopback
    addresses are included so that a port-forwarded or in-pod ``curl`` can verify it.
    """
    if not hostnames:
        raise ValueError("a self-signed certificate needs at least one host name")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0]),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "megamon (self-signed)"),
        ]
    )
    alt_names: list[x509.GeneralName] = [x509.DNSName(host) for host in dict.fromkeys(hostnames)]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    now = dt.datetime.now(dt.UTC)
    public = key.public_key()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def describe(chain_pem: bytes) -> Certificate:
    """Fingerprint, expiry and names of the first certificate in ``chain_pem``.

    Raises ``ValueError`` when ``chain_pem`` holds no PEM certificate.
    """
    leaf = x509.load_pem_x509_certificates(chain_pem)[0]
    names: list[str] = []
    with contextlib.suppress(x509.ExtensionNotFound):
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names += san.get_values_for_type(x509.DNSName)
        names += [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return Certificate(chain_pem, fingerprint(leaf), leaf.not_valid_after_utc, tuple(names))


def _new_context() -> ssl.SSLContext:
    """A server context with the standard library's secure defaults and TLS 1.2 at least."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(_ALPN)
    return context


@contextlib.contextmanager
def _in_memory_files(*contents: bytes) -> Iterator[list[str]]:
    """Paths that read back ``contents``: anonymous memory files, else a private temp dir.

    ``ssl.SSLContext.load_cert_chain`` takes paths only. ``memfd_create`` gives a file that
    exists only in memory and vanishes when closed; where there is none (not Linux, or no
    ``/proc``) a 0700 temporary directory removed at once is the fallback.
    """
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fds: list[int] = []
        try:
            for data in contents:
                fd = memfd_create("megamon-tls", os.MFD_CLOEXEC)
                fds.append(fd)
                with open(fd, "wb", closefd=False) as file:
                    file.write(data)
            yield [f"/proc/self/fd/{fd}" for fd in fds]
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="megamon-tls-") as directory:
        paths = []
        for index, data in enumerate(contents):
            path = Path(directory) / str(index)
            path.touch(mode=0o600)
            path.write_bytes(data)
            paths.append(str(path))
        yield paths


class ServingTLS:
    """The server side of TLS for ``/metrics``: one ``SSLContext`` that always presents the
    current certificate.

    Build it with ``from_files`` or ``self_signed`` (or ``serving_tls`` to choose by
    configuration) and hand ``context`` to ``MetricsServer``. For files, every handshake
    checks whether they changed and, if so, loads them into a new context that the handshake
    switches to (``sni_callback`` runs for every ClientHello, with or without SNI), so
    connections already open keep theirs and the next scrape sees the renewed certificate.
    """

    def __init__(
        self,
        context: ssl.SSLContext,
        certificate: Certificate,
        files: tuple[Path, Path] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._context = context
        self._current = context
        self._certificate = certificate
        self._files = files
        self._signature = _signature(files) if files is not None else None
        if files is not None:
            context.sni_callback = self._on_client_hello

    @classmethod
    def from_files(cls, cert_file: str | Path, key_file: str | Path) -> ServingTLS:
        """The certificate chain in ``cert_file`` and its key in ``key_file`` (PEM).

        Raises ``ConfigError`` naming the files when they are missing, unreadable, or not a
        matching pair, so a bad Secret stops the start with one line rather than a traceback.
        """
        files = (Path(cert_file), Path(key_file))
        try:
            context, certificate = _load(files)
        except (OSError, ssl.SSLError, ValueError) as err:
            raise ConfigError(
                f"metrics TLS: cannot load certificate {files[0]} and key {files[1]}: "
                f"{_reason(err)}"
            ) from None
        _log_certificate(f"certificate from {files[0]}", certificate)
        return cls(context, certificate, files)

    @classmethod
    def self_signed(cls, hostnames: Sequence[str] | None = None) -> ServingTLS:
        """A fresh self-signed certificate for ``hostnames`` (default: localhost and the
        host's name), logged with its fingerprint so that it can be pinned."""
        cert_pem, key_pem = generate_self_signed(
            default_hostnames() if hostnames is None else hostnames
        )
        context = _new_context()
        with _in_memory_files(cert_pem, key_pem) as (cert_path, key_path):
            context.load_cert_chain(cert_path, key_path)
        certificate = describe(cert_pem)
        _log_certificate("self-signed certificate", certificate)
        return cls(context, certificate)

    @property
    def context(self) -> ssl.SSLContext:
        """The context to serve with; it presents the newest certificate that loaded."""
        return self._context

    @property
    def certificate(self) -> Certificate:
        """The certificate new connections are given."""
        with self._lock:
            return self._certificate

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since last look; true if a new pair is in use.

        A pair that fails to load (a half-written renewal, a key that does not match) is
        logged once and the previous certificate stays in service until the files change again.
        """
        if self._files is None:
            return False
        signature = _signature(self._files)
        with self._lock:
            if signature == self._signature:
                return False
            self._signature = signature
        try:
            context, certificate = _load(self._files)
        except (OSError, ssl.SSLError, ValueError) as err:
            log.warning(
                "metrics TLS: keeping the previous certificate; %s and %s do not load: %s",
                *self._files,
                _reason(err),
            )
            return False
        with self._lock:
            self._current, self._certificate = context, certificate
        _log_certificate(f"reloaded certificate from {self._files[0]}", certificate)
        return True

    def _on_client_hello(
        self, connection: ssl.SSLSocket | ssl.SSLObject, _server_name: str | None, _: ssl.SSLContext
    ) -> None:
        self.reload_if_changed()
        with self._lock:
            current = self._current
        if connection.context is not current:
            connection.context = current


def serving_tls(cert_file: str | None, key_file: str | None) -> ServingTLS:
    """From the files when both are given, a self-signed certificate when neither is.

    One without the other is a configuration mistake (``ConfigError``), not a reason to fall
    back silently to a certificate nobody can verify.
    """
    if cert_file and key_file:
        return ServingTLS.from_files(cert_file, key_file)
    if cert_file or key_file:
        raise ConfigError("metrics TLS: give both a certificate and a key file, or neither")
    return ServingTLS.self_signed()


def _load(files: tuple[Path, Path]) -> tuple[ssl.SSLContext, Certificate]:
    """Read both files once, so the certificate described is exactly the one served."""
    chain, key = (path.read_bytes() for path in files)
    certificate = describe(chain)
    context = _new_context()
    with _in_memory_files(chain, key) as (chain_path, key_path):
        context.load_cert_chain(chain_path, key_path)
    return context, certificate


def _signature(files: tuple[Path, Path]) -> _FileSignature | None:
    """None when a file is missing (mid-swap): it differs from any real signature."""
    try:
        stats = [os.stat(path) for path in files]
    except OSError:
        return None
    return tuple((st.st_ino, st.st_size, st.st_mtime_ns) for st in stats)


def _reason(err: Exception) -> str:
    if isinstance(err, ssl.SSLError):
        return err.reason or str(err)
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__


def _log_certificate(what: str, certificate: Certificate) -> None:
    log.info(
        "metrics TLS: serving %s for %s, SHA-256 fingerprint %s, valid until %s",
        what,
        ", ".join(certificate.names) or "(no subjectAltName)",
        certificate.fingerprint,
        certificate.not_after.isoformat(),
    )
    if certificate.not_after <= dt.datetime.now(dt.UTC):
        log.warning("metrics TLS: the %s expired on %s", what, certificate.not_after.isoformat())
