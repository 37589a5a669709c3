"""Options shared by every command that reads history: ``--config-path``, or
``--events-dir DIR`` (a directory standing for ``<bucket>/<EventsBucketPath>``), or
``--bucket B --path P``.

Every such command says on stderr where it reads from and why (which option or file chose
it), and warns when that source holds no history at all: a report of "no resources" from the
wrong directory must not look like a quiet fleet."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from megamon.config import DEFAULT_CONFIG_PATH, Config, load_config
from megamon.domain import timestamps
from megamon.domain.descriptions import shipped, shipped_names
from megamon.domain.kinds import Kind, event_file
from megamon.errors import ConfigError
from megamon.stores.base import EventStore
from megamon.stores.factory import Overrides, history_location, store_at
from megamon.stores.local import LocalEventStore

BUILTIN_NOUNS = tuple(k.value for k in Kind)


def _shipped_nouns() -> list[str]:
    return list(dict.fromkeys(shipped(name).Noun for name in shipped_names()))


def kinds_help() -> str:
    """What a KIND argument may be, for every command's help: the one list of kinds."""
    described = [n for n in _shipped_nouns() if n not in BUILTIN_NOUNS]
    return (
        f"a built-in kind ({', '.join(BUILTIN_NOUNS)}) or the noun of a kind the "
        f"configuration's WorkloadKinds declares (shipped: {', '.join(described)})"
    )


def known_kinds(config: Config) -> list[str]:
    """The kinds a history command can read with ``config``: the built-in ones, then those its
    ``WorkloadKinds`` declares (shipped or written out), each once."""
    declared = [description.Noun for description in config.WorkloadKinds]
    return list(dict.fromkeys([*BUILTIN_NOUNS, *declared]))


def add_history_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-path",
        metavar="PATH",
        help="the configuration of 'megamon run', whose EventsBucketName / EventsLocalDir "
        f"say where history is (default: {DEFAULT_CONFIG_PATH} if present, else the "
        f"directory {Config().EventsLocalDir})",
    )
    parser.add_argument("--events-dir", metavar="DIR", help="read history from this directory")
    parser.add_argument("--bucket", metavar="B", help="read history from this GCS bucket")
    parser.add_argument(
        "--path",
        metavar="P",
        help="with --bucket: the history's object prefix in the bucket, e.g. "
        "megamon/clusters/CLUSTER (default: the configuration's EventsBucketPath, else "
        "megamon/clusters/<GKE.ClusterName>)",
    )


def parse_kind(text: str) -> Kind:
    """A kind's noun; whether the history has such a kind is decided with the configuration
    (``resolve_kind``), which may declare kinds of its own."""
    try:
        return Kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a kind's noun (lowercase letters, digits and single "
            f"underscores); known without a configuration: {', '.join(BUILTIN_NOUNS)}"
        ) from None


def described_kinds(args: argparse.Namespace) -> list[Kind]:
    """The described kinds of the configuration the history options name."""
    return [description.kind for description in history_config(args).WorkloadKinds]


def history_kinds(args: argparse.Namespace) -> list[Kind]:
    """Every kind a history the options name may hold: the built-in ones, then the
    configuration's described ones."""
    return [*Kind, *described_kinds(args)]


def resolve_kind(kind: Kind, args: argparse.Namespace) -> Kind:
    """``kind`` itself if built in, else the configuration's description of that noun (which
    says where its history lives); ``ConfigError`` when there is none."""
    if kind.builtin:
        return kind
    for described in described_kinds(args):
        if described == kind:
            return described
    known = ", ".join(known_kinds(history_config(args)))
    hint = "" if args.config_path else "; a described kind needs --config-path"
    raise ConfigError(
        f"unknown kind {kind.value!r}: neither built in nor declared in the configuration's "
        f"WorkloadKinds (known: {known}{hint}; docs/kinds.md)"
    )


def parse_now(text: str | None) -> int:
    """``--now``: an RFC 3339 timestamp, or the current time when not given."""
    if text is None:
        return time.time_ns()
    try:
        return timestamps.parse(text)
    except timestamps.TimestampError as err:
        raise ConfigError(f"--now: {err}") from None


def history_config(args: argparse.Namespace) -> Config:
    """The configuration the history options name (a default one when none is given)."""
    if args.config_path:
        return load_config(args.config_path)
    if Path(DEFAULT_CONFIG_PATH).exists():
        return load_config(DEFAULT_CONFIG_PATH)
    return Config()


def history_store(args: argparse.Namespace, *, writable: bool = False) -> EventStore:
    """The store the options name, announced on stderr with a warning when it is empty;
    read-only unless ``writable`` (only ``events compact`` writes)."""
    store, reason = _named_store(args, writable)
    command = " ".join(filter(None, ("megamon", args.command, getattr(args, "action", None))))
    print(f"{command}: reading history from {where(store)} ({reason})", file=sys.stderr)
    warning = emptiness(store, _empty_hint(args), history_kinds(args))
    if warning is not None:
        print(f"{command}: warning: {warning}", file=sys.stderr)
    return store


def source_reason(args: argparse.Namespace, config: Config) -> str:
    """Why the history is read from where it is: the option or the file that said so."""
    if args.events_dir:
        return "--events-dir"
    if args.bucket:
        return "--bucket"
    origin = args.config_path or (DEFAULT_CONFIG_PATH if Path(DEFAULT_CONFIG_PATH).exists() else "")
    if not origin:
        return (
            f"the default: no --events-dir, --bucket or --config-path, and no {DEFAULT_CONFIG_PATH}"
        )
    if config.EnableSimulation:
        return f"EnableSimulation in {origin}: an in-memory history, always empty here"
    key = "EventsBucketName" if config.EventsBucketName else "EventsLocalDir"
    return f"{key} in {origin}"


def where(store: EventStore) -> str:
    """``store.describe()``, a local directory made absolute (``./megamon-data`` is ambiguous)."""
    if isinstance(store, LocalEventStore):
        return str(Path(store.describe()).resolve())
    return store.describe()


_NO_SOURCE_HINT = "give --events-dir DIR, --bucket B --path P or --config-path PATH"


def _empty_hint(args: argparse.Namespace) -> str:
    """What to give instead, when the source the options name holds nothing."""
    if args.bucket and not args.path:
        return (
            "give --path P, the history's prefix in the bucket, e.g. megamon/clusters/CLUSTER "
            "(EventsBucketPath of the cluster's configuration)"
        )
    if args.bucket or args.events_dir:
        return "check the location, or give --config-path PATH of the megamon that writes it"
    return _NO_SOURCE_HINT


def emptiness(
    store: EventStore, hint: str = _NO_SOURCE_HINT, kinds: Sequence[Kind] = tuple(Kind)
) -> str | None:
    """A warning when ``store`` has no live event file, log and archive of any of ``kinds``
    (the built-in ones and those the configuration declares: a history of described kinds
    alone is a history); ``hint`` says what to give instead."""
    if isinstance(store, LocalEventStore):
        directory = Path(store.describe())
        if not directory.is_dir():
            return f"{where(store)} does not exist: there is no history there"
        if any((directory / event_file(kind)).exists() for kind in kinds):
            return None
    elif any(store.read(kind).version is not None for kind in kinds):
        return None
    if any(store.log.segments(kind) for kind in kinds):
        return None  # a history written since its last snapshot lives in its log
    if any(store.archived_keys(kind) for kind in kinds):
        return None
    return f"{where(store)} holds no event files: nothing has been recorded there ({hint})"


def history_overrides(args: argparse.Namespace) -> Overrides:
    """The ``--events-dir`` / ``--bucket`` / ``--path`` a command was given."""
    return Overrides(events_dir=args.events_dir, bucket=args.bucket, path=args.path)


def _named_store(args: argparse.Namespace, writable: bool) -> tuple[EventStore, str]:
    """The store the options name and why; an override wins over the configuration file."""
    overrides = history_overrides(args)
    overrides.check()
    config = Config() if args.events_dir else history_config(args)
    store = store_at(history_location(config, overrides), read_only=not writable)
    return store, source_reason(args, config)
