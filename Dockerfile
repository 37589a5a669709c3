# syntax=docker/dockerfile:1
#
# megamon's image: `megamon run` on a slim CPython 3.11, as a non-root user.
#
#   docker build \
#     --build-arg VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
#     -t REGISTRY/megamon:TAG .
#
# Stage 1 builds megamon's wheel from the package sources only (.dockerignore admits nothing
# else: no tests, no internal/ emulators). Stage 2 installs that wheel and its dependencies
# from the package index and nothing else, so the image holds exactly what `pip install
# megamon` would. test/integration/deploy/test_dockerfile.py replays both stages' commands
# into a throwaway virtualenv, since CI has no Docker engine.
#
# Needs BuildKit (the default builder since Docker 23) for the RUN --mount flags.

# Release builds should pin the base by digest: --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:…
ARG PYTHON_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

WORKDIR /src
COPY pyproject.toml README.md ./
COPY megamon/ megamon/
# --no-deps: the wheel of megamon alone; its dependencies are resolved in the final stage.
# The pip cache is a BuildKit cache mount: it speeds up rebuilds and never lands in a layer.
RUN --mount=type=cache,target=/root/.cache/pip \
    python -m pip wheel --no-deps --wheel-dir /dist .

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

# No .pyc written at run time (the root filesystem is read-only in the pod; pip compiles the
# installed modules at build time) and log lines are flushed as they are written.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The wheel comes in through a bind mount, so it takes no space in the image; `megamon
# --version` proves the console script and every import it needs work.
RUN --mount=type=bind,from=build,source=/dist,target=/dist \
    --mount=type=cache,target=/root/.cache/pip \
    python -m pip install --root-user-action=ignore /dist/megamon-*.whl \
    && megamon --version

# A numeric, unprivileged user: the kubelet can only enforce runAsNonRoot on a numeric UID.
# The passwd entry gives the process a name and a home that libraries may look up; nothing
# writes there.
RUN groupadd --gid 65532 megamon \
    && useradd --uid 65532 --gid 65532 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin megamon

# Build metadata last, so that a new commit does not invalidate the layers above.
# VERSION is the package version (pyproject.toml); the build refuses a VERSION that differs
# from what the installed package reports, so the label and megamon_build_info agree.
ARG PYTHON_IMAGE
ARG VERSION=""
ARG COMMIT=unknown
ARG DATE=unknown
RUN if [ -n "$VERSION" ] && [ "megamon ${VERSION#v}" != "$(megamon --version | cut -d' ' -f1,2)" ]; then \
        echo "VERSION=$VERSION but the package says: $(megamon --version)" >&2; exit 1; \
    fi

# megamon_build_info{version,commit,date}: the version comes from the package metadata,
# commit and date from these (megamon/app.py, build_info).
ENV MEGAMON_BUILD_COMMIT=${COMMIT} \
    MEGAMON_BUILD_DATE=${DATE}

LABEL org.opencontainers.image.title="megamon" \
      org.opencontainers.image.description="Up/down history, provisioning, MTTR and MTBI of GKE TPU node pools and training workloads, as Prometheus metrics." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${DATE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"

USER 65532:65532
WORKDIR /
# MetricsAddr (/metrics) and ProbeAddr (/healthz, /readyz) of the default configuration.
EXPOSE 8080 8081

ENTRYPOINT ["megamon", "run"]
CMD ["--config-path", "/etc/megamon/config.json"]
