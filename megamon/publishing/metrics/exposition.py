"""A fast encoder of the Prometheus text format (and OpenMetrics) for a large fleet.

Why: a 65,000-node fleet is ~200,000 samples. ``prometheus_client`` renders a sample at a
time — a ``Sample`` tuple, a sorted and escaped label string, a formatted value — and takes
well over a second for that many, on every scrape. The fleet's families already know their
label sets (one per resource, shared by all of its samples), so they can write their lines
directly: ``RenderedFamily`` is a metric family that produces its own sample lines, with
label strings its owner escapes once per resource and keeps across scrapes. What the series
are, and when each is emitted, stays with the family's owner (``collector.py``); this module
only knows the format.

The output is byte for byte what ``prometheus_client`` writes for the same families — the
tests parse and compare both. A ``RenderedFamily`` is a gauge or a histogram (the report's
distributions); every other family (build info, the instruments of ``telemetry``) is
rendered by ``prometheus_client`` itself.
``choose_encoder`` makes the same content negotiation as ``prometheus_client``'s, so it is a
drop-in replacement in the HTTP handler.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial

from prometheus_client import exposition as text_format
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

Encoder = Callable[[Collector], bytes]

_LEGACY_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_OPENMETRICS_EOF = b"# EOF\n"
_PLAIN_FROM = float("-inf")
_PLAIN_UPTO = 1e6
"""Values in (-inf, 1e6) print as Python's ``repr``; ``floatToGoString`` switches to Go's
exponent form from 1e6 up, and spells infinities and NaN its own way."""


def _go_float(value: float) -> str:
    return str(floatToGoString(value))  # type: ignore[no-untyped-call]


_SHORT_EXPONENT_UPTO = 1e10
"""Below this, Go's exponent has two digits, which every ``prometheus_client`` release this
project allows writes alike (older ones write ``e+010`` from here up)."""


def value_text(value: float) -> str:
    """``value`` as the exposition writes it (``prometheus_client``'s ``floatToGoString``)."""
    if _PLAIN_FROM < value < _PLAIN_UPTO:
        return repr(float(value))
    if _PLAIN_UPTO <= value < _SHORT_EXPONENT_UPTO:
        return _go_exponent(float(value))
    return _go_float(value)


def _go_exponent(value: float) -> str:
    """``floatToGoString`` of a value in [1e6, 1e10), in fewer steps: Python writes it plainly
    (``1234567.5``) and Go with an exponent (``1.2345675e+06``). Up times of a long history
    (11.6 days to 317 years) are in that range, so a large fleet's scrape writes tens of
    thousands of them (``test_exposition`` holds the two equal over the range and at its
    edges, with the oldest ``prometheus_client`` allowed too)."""
    text = repr(value)
    dot = text.find(".")
    mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
    return f"{mantissa}e+{dot - 1:02d}"


def escape_label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def label_text(labels: Mapping[str, str]) -> str:
    """``{k="v",…}`` with keys sorted and values escaped, or ``""`` for no labels."""
    if not labels:
        return ""
    inner = ",".join(f'{key}="{escape_label_value(labels[key])}"' for key in sorted(labels))
    return "{" + inner + "}"


class RenderedFamily(Metric, ABC):
    """A metric family that writes its own sample lines.

    Subclasses implement ``sample_lines`` (each line ``name{labels} value\\n``, in
    exposition order) and ``build_samples`` (the same samples as ``Sample`` tuples). The
    encoder here uses the lines; ``samples`` — what ``prometheus_client`` and
    ``get_sample_value`` read — is built from ``build_samples`` on first use only.
    """

    def __init__(self, name: str, documentation: str, typ: str = "gauge") -> None:
        self._built: list[Sample] | None = None
        super().__init__(name, documentation, typ)

    @property
    def samples(self) -> list[Sample]:
        if self._built is None:
            self._built = self.build_samples()
        return self._built

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        # Metric.__init__ starts every family with an empty list; anything else replaces
        # what the family would build.
        self._built = value or None

    @abstractmethod
    def build_samples(self) -> list[Sample]:
        """The family's samples as ``prometheus_client`` objects."""

    @abstractmethod
    def sample_lines(self) -> Sequence[bytes]:
        """The family's sample lines in the text format, each ending in a newline, in
        UTF-8: written once, they are joined into the body without a second encoding."""

    def writes_itself(self) -> bool:
        """Whether the lines can be used as they are: a gauge or a histogram (whose lines
        both formats write alike) with a legacy name."""
        return (
            self._built is None
            and self.type in _WRITTEN_TYPES
            and bool(_LEGACY_NAME.match(self.name))
        )


class _Families:
    """A collector of families already collected, for ``prometheus_client``'s encoders."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


_WRITTEN_TYPES = frozenset({"gauge", "histogram"})
"""The types whose families write their own lines: both formats write their samples, HELP
and TYPE alike (a histogram here has no ``_created`` sample)."""
_CREATED_SUFFIX = "_created"
_CREATED_TYPES = frozenset({"counter", "histogram", "summary", "gaugehistogram"})


def _without_created(family: Metric) -> Metric:
    """``family`` less its ``<name>_created`` samples.

    ``prometheus_client`` adds one to every counter, histogram and summary series: the time
    the series was created, which no dashboard or alert of megamon reads, and which a
    Prometheus server stores as one more series per counter. The OTLP exporter still reads
    them (its start times) from the registry: only ``/metrics`` leaves them out.
    """
    if family.type not in _CREATED_TYPES:
        return family
    created = family.name + _CREATED_SUFFIX
    if not any(sample.name == created for sample in family.samples):
        return family
    kept = Metric(family.name, family.documentation, family.type, family.unit)
    kept.samples = [sample for sample in family.samples if sample.name != created]
    return kept


def _help_text(documentation: str) -> str:
    return documentation.replace("\\", r"\\").replace("\n", r"\n")


def _openmetrics_help_text(documentation: str) -> str:
    return escape_label_value(documentation)


def _encode(
    registry: Collector,
    render_others: Callable[[list[Metric]], bytes],
    help_text: Callable[[str], str],
) -> list[bytes]:
    """The exposition in pieces: every line of the families written here, and the text of
    each run of other families, for the caller to join once (a large fleet's lines are held
    by the collector's rows anyway; joining them per family and then joining the families
    cost a second copy of ~25 MB)."""
    out: list[bytes] = []
    others: list[Metric] = []
    for family in registry.collect():
        if isinstance(family, RenderedFamily) and family.writes_itself():
            if others:
                out.append(render_others(others))
                others = []
            help = f"# HELP {family.name} {help_text(family.documentation)}\n"
            out.append((help + f"# TYPE {family.name} {family.type}\n").encode("utf-8"))
            out.extend(family.sample_lines())
        else:
            others.append(_without_created(family))
    if others:
        out.append(render_others(others))
    return out


def generate_latest(registry: Collector, escaping: str = openmetrics.UNDERSCORES) -> bytes:
    """The Prometheus text format (0.0.4) of ``registry``, as ``prometheus_client`` writes it."""

    def others(families: list[Metric]) -> bytes:
        text: bytes = text_format.generate_latest(_Families(families), escaping)
        return text

    return b"".join(_encode(registry, others, _help_text))


def generate_openmetrics(
    registry: Collector, escaping: str = openmetrics.UNDERSCORES, version: str = "1.0.0"
) -> bytes:
    """OpenMetrics text of ``registry``, as ``prometheus_client`` writes it."""

    def others(families: list[Metric]) -> bytes:
        text: bytes = openmetrics.generate_latest(  # type: ignore[no-untyped-call]
            _Families(families), escaping, version
        )
        return text.removesuffix(_OPENMETRICS_EOF)

    out = _encode(registry, others, _openmetrics_help_text)
    out.append(_OPENMETRICS_EOF)
    return b"".join(out)


def choose_encoder(accept_header: str) -> tuple[Encoder, str]:
    """``prometheus_client.exposition.choose_encoder``, with these encoders in its place."""
    encoder, content_type = text_format.choose_encoder(accept_header)
    target = encoder.func if isinstance(encoder, partial) else encoder
    keywords = encoder.keywords if isinstance(encoder, partial) else {}
    if target is openmetrics.generate_latest:
        return partial(generate_openmetrics, **keywords), content_type
    if target is text_format.generate_latest:
        return partial(generate_latest, **keywords), content_type
    return encoder, content_type  # a format this module does not write


def gauge_lines(
    name: str, label_texts: Iterable[str], values: Iterable[float | None]
) -> list[bytes]:
    """The sample lines of gauge ``name``: one per (label text, float value) pair whose value
    is not ``None``."""
    return [
        gauge_line(name, labels, value)
        for labels, value in zip(label_texts, values, strict=True)
        if value is not None
    ]


def gauge_line(name: str, labels: str, value: float) -> bytes:
    """One sample line of gauge ``name``, ``labels`` its label text (``label_text``), in
    UTF-8 (``RenderedFamily.sample_lines``)."""
    text = repr(value) if _PLAIN_FROM < value < _PLAIN_UPTO else value_text(value)
    return f"{name}{labels} {text}\n".encode()
