"""Options shared by every command that reads history: ``--config-path``, or
``--events-dir DIR`` (a directory standing for ``<bucket>/<EventsBucketPath>``), or
``--bucket B --path P``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from megamon.config import DEFAULT_CONFIG_PATH, Config, load_config
from megamon.domain import timestamps
from megamon.domain.descriptions import shipped, shipped_names
from megamon.domain.kinds import Kind
from megamon.errors import ConfigError
from megamon.stores.base import EventStore
from megamon.stores.factory import gcs_client, open_store
from megamon.stores.gcs import GcsEventStore
from megamon.stores.local import LocalEventStore


def add_history_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-path",
        metavar="PATH",
        help=f"the configuration of 'megamon run' (default: {DEFAULT_CONFIG_PATH} if present)",
    )
    parser.add_argument("--events-dir", metavar="DIR", help="read history from this directory")
    parser.add_argument("--bucket", metavar="B", help="read history from this GCS bucket")
    parser.add_argument("--path", metavar="P", help="the history's path in --bucket")


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


def history_store(args: argparse.Namespace) -> EventStore:
    """The store the options name; an override wins over the configuration file."""
    if args.events_dir and args.bucket:
        raise ConfigError("give --events-dir or --bucket, not both")
    if args.path and not args.bucket:
        raise ConfigError("--path needs --bucket")
    if args.events_dir:
        if not Path(args.events_dir).is_dir():
            raise ConfigError(f"--events-dir {args.events_dir}: no such directory")
        return LocalEventStore(args.events_dir)
    config = history_config(args)
    if args.bucket:
        path = args.path if args.path is not None else config.events_path
        return GcsEventStore(gcs_client(config.GKE.ProjectID), args.bucket, path)
    return open_store(config)
