"""The Dockerfile, without a Docker engine: parsed, checked, and its build replayed.

The replay runs the Dockerfile's own RUN commands, in order, with the shell Docker uses
(``/bin/sh -c``), the stage's ENV and ARG values in the environment, and each stage's absolute
paths (WORKDIR, COPY destinations, mount sources and targets) moved under a temporary
directory. The image's interpreter is a throwaway ``python -m venv``; the build context is the
repository as .dockerignore filters it. Cache mounts are dropped (pip's own cache stands in),
and the user-creating RUN is checked, not run: it would change this machine's /etc/passwd.

What comes out must be what the image runs: ``megamon --version`` answers, the ENTRYPOINT
and CMD make a valid command line, nothing of test/ or internal/ is importable, and the build
metadata reaches ``megamon_build_info`` through the environment. Needs the package index
(the wheel's dependencies); with pip's cache warm it takes ~30 s.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from megamon.build import BUILD_COMMIT_ENV, BUILD_DATE_ENV
from megamon.config import DEFAULT_CONFIG_PATH, Config
from megamon.serving.http import parse_addr

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
BASE_IMAGE = "python:3.11-slim"
HOST_CHANGING = ("groupadd", "useradd")
BUILD_ARGS = {"COMMIT": "0123456789abcdef0123456789abcdef01234567", "DATE": "2026-05-05T03:00:00Z"}
OCI = "org.opencontainers.image."


# -- parsing --------------------------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    text: str  # everything after the keyword, flags included
    line: int

    def flags(self) -> tuple[list[str], str]:
        """Leading ``--flag=value`` tokens, and the rest."""
        flags, rest = [], self.text
        while rest.startswith("--"):
            token, _, rest = rest.partition(" ")
            flags.append(token)
            rest = rest.lstrip()
        return flags, rest

    def mounts(self) -> list[dict[str, str]]:
        found = []
        for flag in self.flags()[0]:
            if flag.startswith("--mount="):
                found.append(dict(p.split("=", 1) for p in flag[len("--mount=") :].split(",")))
        return found

    def exec_form(self) -> list[str]:
        value = json.loads(self.text)
        assert isinstance(value, list), f"line {self.line}: {self.keyword} is not exec form"
        return value


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines with continuations joined and comments dropped, as Docker reads them."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        yield start, " ".join(p for p in pending if p)
        pending = []
    assert not pending, "the Dockerfile ends inside a continuation"


def _expand(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m[1] or m[2], ""), text)


def _pairs(text: str) -> dict[str, str]:
    """``K=V K2="v 2"`` (ENV, LABEL, ARG) → a mapping; a bare ``K`` (ARG) maps to ""."""
    result = {}
    for token in shlex.split(text):
        key, _, value = token.partition("=")
        result[key] = value
    return result


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line, logical in _logical_lines(text):
        keyword, _, rest = logical.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(_expand(words[0], global_args), name))
        elif not stages:
            assert keyword == "ARG", f"line {line}: {keyword} before the first FROM"
            global_args.update(_pairs(rest))
        else:
            stages[-1].instructions.append(Instruction(keyword, rest.strip(), line))
    return global_args, stages


@pytest.fixture(scope="module")
def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse(DOCKERFILE.read_text())


def _final(dockerfile: tuple[dict[str, str], list[Stage]]) -> Stage:
    return dockerfile[1][-1]


def _stage_env(
    global_args: dict[str, str], stage: Stage, build_args: dict[str, str], until: int | None
) -> dict[str, str]:
    """ARG and ENV values in force before instruction ``until`` (all of them if None)."""
    values: dict[str, str] = {}
    for instruction in stage.instructions[:until]:
        if instruction.keyword == "ARG":
            for key, default in _pairs(instruction.text).items():
                values[key] = build_args.get(key, default or global_args.get(key, ""))
        elif instruction.keyword == "ENV":
            values.update({k: _expand(v, values) for k, v in _pairs(instruction.text).items()})
    return values


# -- .dockerignore --------------------------------------------------------------------------------


def _ignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                regex, i = regex + pattern[i : end + 1], end + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        patterns.append((negated, re.compile(f"^{regex}$")))
    return patterns


def ignored(relative: str) -> bool:
    """Docker's rule: the last pattern that matches the path or one of its parents wins."""
    parts = relative.split("/")
    candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for negated, regex in _ignore_patterns():
        if any(regex.match(c) for c in candidates):
            result = not negated
    return result


def _context_files(source: str) -> list[Path]:
    """The files of ``source`` (relative to the repo) that reach the build context."""
    root = REPO / source
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [f for f in files if not ignored(f.relative_to(REPO).as_posix())]


# -- static checks --------------------------------------------------------------------------------


def test_two_stages_on_slim_python_311(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    _, stages = dockerfile
    assert len(stages) == 2
    assert stages[0].name == "build"
    assert all(s.base == BASE_IMAGE for s in stages)


def test_the_build_stage_sees_only_the_package_sources(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    build = dockerfile[1][0]
    sources = [s for c in build.all("COPY") for s in shlex.split(c.flags()[1])[:-1]]
    assert sorted(s.rstrip("/") for s in sources) == ["README.md", "megamon", "pyproject.toml"]
    for excluded in ("test/conftest.py", "internal/__init__.py", ".venv/bin/python", ".git/HEAD"):
        assert ignored(excluded), f".dockerignore lets {excluded} into the build context"
    for kept in ("pyproject.toml", "README.md", "megamon/app.py", "megamon/py.typed"):
        assert not ignored(kept), f".dockerignore keeps {kept} out of the build context"
    assert ignored("megamon/__pycache__/app.cpython-311.pyc")


def test_the_final_stage_takes_nothing_but_the_wheel(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    final = _final(dockerfile)
    assert not final.all("COPY") and not final.all("ADD"), "files copied into the image"
    binds = [m for r in final.all("RUN") for m in r.mounts() if m.get("type") == "bind"]
    assert binds and all(m.get("from") == "build" for m in binds)


def test_the_image_runs_megamon_as_an_unprivileged_numeric_user(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    final = _final(dockerfile)
    assert final.all("ENTRYPOINT")[-1].exec_form() == ["megamon", "run"]
    assert final.all("CMD")[-1].exec_form() == ["--config-path", DEFAULT_CONFIG_PATH]
    user = final.all("USER")[-1].text
    assert re.fullmatch(r"\d+:\d+", user), f"USER {user} is not numeric uid:gid"
    uid, gid = (int(x) for x in user.split(":"))
    assert uid > 0 and gid > 0
    assert final.instructions.index(final.all("USER")[-1]) > max(
        final.instructions.index(r) for r in final.all("RUN")
    ), "USER must come after every RUN, so the image runs as it"
    adds = " ".join(r.text for r in final.all("RUN") if r.text.startswith(HOST_CHANGING))
    assert f"--uid {uid}" in adds and f"--gid {gid}" in adds
    pod = yaml.safe_load((REPO / "deploy" / "base" / "deployment.yaml").read_text())
    assert pod["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == uid
    defaults = Config()
    exposed = {int(p) for e in final.all("EXPOSE") for p in e.text.split()}
    assert exposed == {parse_addr(defaults.MetricsAddr).port, parse_addr(defaults.ProbeAddr).port}


def test_build_metadata_reaches_the_environment_and_the_labels(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    global_args, stages = dockerfile
    final = stages[-1]
    declared = set().union(*(_pairs(a.text).keys() for a in final.all("ARG")))
    assert {"VERSION", "COMMIT", "DATE"} <= declared
    env = _stage_env(global_args, final, {**BUILD_ARGS, "VERSION": "1.2.3"}, None)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env[BUILD_COMMIT_ENV] == BUILD_ARGS["COMMIT"]
    assert env[BUILD_DATE_ENV] == BUILD_ARGS["DATE"]
    labels: dict[str, str] = {}
    for label in final.all("LABEL"):
        labels |= {k: _expand(v, env) for k, v in _pairs(label.text).items()}
    assert labels[OCI + "title"] == "megamon"
    assert labels[OCI + "version"] == "1.2.3"
    assert labels[OCI + "revision"] == BUILD_ARGS["COMMIT"]
    assert labels[OCI + "created"] == BUILD_ARGS["DATE"]
    assert labels[OCI + "licenses"] == "Apache-2.0"
    assert labels[OCI + "base.name"] == BASE_IMAGE


# -- the replayed build ---------------------------------------------------------------------------


@dataclass
class Build:
    """A replayed build: the image's interpreter (a venv) and each stage's relocated root."""

    root: Path
    venv: Path
    global_args: dict[str, str]
    stages: list[Stage]

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
            and not k.startswith("MEGAMON_")
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"
        return env | (extra or {})

    def stage_root(self, stage: Stage) -> Path:
        return self.root / f"stage-{stage.name or self.stages.index(stage)}"


def _absolute_paths(stages: list[Stage]) -> set[str]:
    """Every absolute path the Dockerfile declares (not "/"): the ones a replay relocates."""
    paths = set()
    for stage in stages:
        for instruction in stage.instructions:
            if instruction.keyword == "WORKDIR":
                paths.add(instruction.text)
            elif instruction.keyword == "COPY":
                paths.add(shlex.split(instruction.flags()[1])[-1])
            for mount in instruction.mounts():
                paths.update(mount[k] for k in ("source", "target") if k in mount)
    return {p.rstrip("/") for p in paths if p.startswith("/") and p != "/"}


def _relocate(command: str, paths: set[str], root: Path) -> str:
    for path in sorted(paths, key=len, reverse=True):
        pattern = rf"(?<![\w./-]){re.escape(path)}(?=/|\s|$|[;&|)'\"*])"
        command = re.sub(pattern, (str(root) + path).replace("\\", "\\\\"), command)
    return command


def _copy(sources: list[str], destination: Path) -> None:
    for source in sources:
        files = _context_files(source.rstrip("/"))
        assert files, f"COPY {source}: nothing in the build context"
        for file in files:
            if (REPO / source).is_dir():
                target = destination / file.relative_to(REPO / source.rstrip("/"))
            else:
                target = destination / file.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target)


def _replay_stage(
    build: Build, stage: Stage, build_args: dict[str, str], paths: set[str]
) -> list[str]:
    """Run one stage; returns the commands it ran."""
    root = build.stage_root(stage)
    root.mkdir(parents=True, exist_ok=True)
    workdir = "/"
    ran = []
    for index, instruction in enumerate(stage.instructions):
        if instruction.keyword == "WORKDIR":
            workdir = instruction.text
            (root / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
        elif instruction.keyword == "COPY":
            flags, rest = instruction.flags()
            assert not flags, f"line {instruction.line}: COPY flags are not replayed"
            *sources, destination = shlex.split(rest)
            target = root / os.path.join(workdir, destination).lstrip("/")
            _copy(sources, target)
        elif instruction.keyword == "RUN":
            _, command = instruction.flags()
            if command.startswith(HOST_CHANGING):
                continue
            for mount in instruction.mounts():
                if mount.get("type") == "bind":
                    source_stage = next(s for s in build.stages if s.name == mount["from"])
                    source = build.stage_root(source_stage) / mount["source"].lstrip("/")
                    link = root / mount["target"].lstrip("/")
                    link.parent.mkdir(parents=True, exist_ok=True)
                    if not link.exists():
                        link.symlink_to(source, target_is_directory=True)
            env = _stage_env(build.global_args, stage, build_args, index)
            done = subprocess.run(
                ["/bin/sh", "-c", _relocate(command, paths, root)],
                cwd=root / workdir.lstrip("/"),
                env=build.env(env),
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
            assert done.returncode == 0, (
                f"line {instruction.line}: {command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
            ran.append(command)
    return ran


@pytest.fixture(scope="module")
def build(
    tmp_path_factory: pytest.TempPathFactory, dockerfile: tuple[dict[str, str], list[Stage]]
) -> Build:
    global_args, stages = dockerfile
    root = tmp_path_factory.mktemp("docker-build")
    venv = root / "image-python"
    subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120
    )
    result = Build(root, venv, global_args, stages)
    paths = _absolute_paths(stages)
    build_args = {**BUILD_ARGS, "VERSION": version("megamon")}
    ran = [c for stage in stages for c in _replay_stage(result, stage, build_args, paths)]
    assert any("pip wheel" in c for c in ran) and any("pip install" in c for c in ran)
    return result


def _python(build: Build, code: str, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in the image's interpreter, isolated from this checkout (-I, cwd /)."""
    done = subprocess.run(
        [str(build.bin / "python"), "-I", "-c", code],
        cwd="/",
        env=build.env(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_built_megamon_reports_its_version(build: Build) -> None:
    done = subprocess.run(
        [str(build.bin / "megamon"), "--version"],
        env=build.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == f"megamon {version('megamon')}"


def test_entrypoint_and_cmd_make_a_megamon_run_command_line(
    build: Build, dockerfile: tuple[dict[str, str], list[Stage]]
) -> None:
    final = _final(dockerfile)
    entrypoint = final.all("ENTRYPOINT")[-1].exec_form()
    cmd = final.all("CMD")[-1].exec_form()
    program = build.bin / entrypoint[0]
    assert program.is_file() and os.access(program, os.X_OK), f"no {entrypoint[0]} on PATH"
    # No config file here, so `megamon run` must stop at once, naming it: the arguments parsed.
    done = subprocess.run(
        [str(program), *entrypoint[1:], *cmd],
        env=build.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert DEFAULT_CONFIG_PATH in done.stderr and "Traceback" not in done.stderr


def test_nothing_but_megamon_is_installed_from_this_repository(build: Build) -> None:
    found: Any = json.loads(
        _python(
            build,
            "import importlib.util as u, json, sysconfig;"
            "spec = lambda n: (u.find_spec(n) or None) and u.find_spec(n).origin;"
            "print(json.dumps({'internal': spec('internal'),"
            " 'test': spec('test'), 'stdlib': sysconfig.get_paths()['stdlib'],"
            " 'megamon': spec('megamon')}))",
        )
    )
    assert found["internal"] is None, "internal/ is importable from the image"
    # The standard library may have its own `test` package; ours must not be there.
    assert found["test"] is None or found["test"].startswith(found["stdlib"])
    assert "site-packages" in found["megamon"]
    assert str(REPO) not in found["megamon"], "megamon is imported from the checkout"
    record = _python(
        build,
        "from importlib.metadata import distribution as d; print(d('megamon').read_text('RECORD'))",
    )
    tops = {line.split(",")[0].split("/")[0] for line in record.splitlines() if line}
    assert tops <= {"megamon", f"megamon-{version('megamon')}.dist-info", ".."}, tops


def test_build_info_comes_from_the_package_and_the_image_environment(
    build: Build, dockerfile: tuple[dict[str, str], list[Stage]]
) -> None:
    global_args, stages = dockerfile
    env = _stage_env(global_args, stages[-1], {**BUILD_ARGS, "VERSION": ""}, None)
    baked = {k: env[k] for k in (BUILD_COMMIT_ENV, BUILD_DATE_ENV)}
    shown = _python(
        build,
        "import json; from megamon.app import build_info; b = build_info();"
        "print(json.dumps([b.version, b.commit, b.date]))",
        baked,
    )
    assert json.loads(shown) == [version("megamon"), BUILD_ARGS["COMMIT"], BUILD_ARGS["DATE"]]


@pytest.mark.parametrize(
    ("given", "accepted"),
    [("", True), ("{v}", True), ("v{v}", True), ("9.9.9", False)],
)
def test_the_build_refuses_a_version_the_package_does_not_have(
    build: Build, dockerfile: tuple[dict[str, str], list[Stage]], given: str, accepted: bool
) -> None:
    global_args, stages = dockerfile
    final = stages[-1]
    check = next(r for r in final.all("RUN") if "VERSION" in r.text)
    index = final.instructions.index(check)
    build_args = {**BUILD_ARGS, "VERSION": given.format(v=version("megamon"))}
    done = subprocess.run(
        ["/bin/sh", "-c", check.flags()[1]],
        env=build.env(_stage_env(global_args, final, build_args, index)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode == 0) is accepted, done.stderr
