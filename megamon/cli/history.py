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
from pathlib import Path

from megamon.config import DEFAULT_CONFIG_PATH, Config, load_config
from megamon.domain import timestamps
from megamon.domain.descriptions import shipped, shipped_names
from megamon.domain.kinds import Kind, event_file
from megamon.errors import ConfigError
from megamon.stores.base import EventStore
from megamon.stores.factory import Overrides, history_location, store_at
from megamon.stores.local import LocalEventStore

KINDS_HELP = ", ".join(k.value for k in Kind)


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
        "--path", metavar="P", help="the history's path in --bucket (default: EventsBucketPath)"
    )


def parse_kind(text: str) -> Kind:
    """A built-in kind, or the noun of a shipped description (``trainjob``); which files a
    described one has comes from the configuration (``resolve_kind``)."""
    nouns = [k.value for k in Kind] + [shipped(name).Noun for name in shipped_names()]
    if text not in nouns:
        known = ", ".join(dict.fromkeys(nouns))
        raise argparse.ArgumentTypeError(f"unknown kind {text!r} (known: {known})")
    return Kind(text)


def described_kinds(args: argparse.Namespace) -> list[Kind]:
    """The described kinds of the configuration the history options name."""
    return [description.kind for description in history_config(args).WorkloadKinds]


def resolve_kind(kind: Kind, args: argparse.Namespace) -> Kind:
    """``kind`` itself if built in, else the configuration's description of that noun (which
    says where its history lives); ``ConfigError`` when there is none."""
    if kind.builtin:
        return kind
    for described in described_kinds(args):
        if described == kind:
            return described
    raise ConfigError(
        f"kind {kind.value!r} is neither built in nor described in the configuration's "
        "WorkloadKinds (docs/kinds.md)"
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
    warning = emptiness(store)
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


def emptiness(store: EventStore) -> str | None:
    """A warning when ``store`` has no live event file and no archive of any kind."""
    if isinstance(store, LocalEventStore):
        directory = Path(store.describe())
        if not directory.is_dir():
            return f"{where(store)} does not exist: there is no history there"
        if any((directory / event_file(kind)).exists() for kind in Kind):
            return None
    elif any(store.read(kind).version is not None for kind in Kind):
        return None
    if any(store.log.segments(kind) for kind in Kind):
        return None  # a history written since its last snapshot lives in its log
    if any(store.archived_keys(kind) for kind in Kind):
        return None
    return (
        f"{where(store)} holds no event files: nothing has been recorded there "
        "(give --events-dir DIR, --bucket B or --config-path PATH)"
    )


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
