# One application image for every service (web, worker, jobs, beat, migrate): docker-compose.yml picks
# the command. Two stages: the builder has the compiler for the C load loop and pip's wheels; the final
# stage has Python, the locked production packages, Chromium (browser probes and PDFs) and the code,
# and nothing that only the tests or the build use (no compiler, Go, test daemons or test tools).
# The base can be chosen: docker compose build --build-arg PYTHON_IMAGE=registry.example/python:3.11-slim-bookworm
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/venv
COPY requirements-prod.txt /tmp/
RUN /opt/venv/bin/pip install -r /tmp/requirements-prod.txt \
 && /opt/venv/bin/pip uninstall -q -y pip
COPY workers/load/_fastloop.c /tmp/
RUN mkdir /opt/fastloop \
 && gcc -O2 -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC \
      -I"$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" /tmp/_fastloop.c \
      -o "/opt/fastloop/_fastloop$(python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" -lssl -lcrypto

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH TLSAUDIT_VAR_DIR=/app/var
# chromium + libnss3-tools: browser probes (an organization CA goes in a per-browser NSS store); fonts for
# PDFs; libatomic1 for the Node.js that drives Playwright.
# dpkg leaves out what a headless Chromium never reads: documentation, translations, icon themes, its
# other languages' resources, and Mesa's GL drivers with the LLVM they link (it draws in software,
# SwiftShader, with --disable-gpu): about 400 MB.
COPY deploy/dpkg-slim.cfg /etc/dpkg/dpkg.cfg.d/slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium libnss3-tools fonts-dejavu-core ca-certificates libatomic1 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 tlsaudit
COPY --from=builder /opt/venv /opt/venv
WORKDIR /app
COPY . .
COPY --from=builder /opt/fastloop/ workers/load/
# Our bytecode compiled once: PYTHONDONTWRITEBYTECODE would otherwise make every CLI run compile again.
RUN python -c "import workers.load._fastloop" \
 && python -m compileall -q tlsaudit workers manage.py \
 && SECRET_KEY=build-only-not-secret-build-only-not-secret ALLOWED_HOSTS=build TLSAUDIT_DEV=0 \
    python manage.py collectstatic --noinput -v0 \
 && mkdir -p var && chown tlsaudit var
USER tlsaudit
EXPOSE 8000
STOPSIGNAL SIGTERM
# --timeout bounds every request; IDEMPOTENCY_LEASE_SECONDS (45) must stay above it. gunicorn is PID 1
# (no shell in between), so SIGTERM reaches it and it stops within --graceful-timeout.
CMD ["gunicorn", "tlsaudit.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "30", "--graceful-timeout", "20", "--access-logfile", "-"]
