# One image for web, worker and beat (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 TLSAUDIT_VAR_DIR=/app/var
# chromium + libnss3-tools: browser probes (an organization CA goes in a per-browser NSS store); fonts for PDFs.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium libnss3-tools fonts-dejavu-core ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 tlsaudit
WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# The load engine's C loop (workers/load/_fastloop.c; the Python engine would run without it), built
# with a compiler that is removed again; and our bytecode compiled once, since PYTHONDONTWRITEBYTECODE
# would otherwise make every CLI run (`manage.py loadtest` ...) compile its modules again (~0.1 s of CPU).
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libssl-dev \
 && gcc -O2 -shared -fPIC -I"$(python -c "import sysconfig; print(sysconfig.get_paths()['include'])")" \
      workers/load/_fastloop.c -o "workers/load/_fastloop$(python -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")" \
      -lssl -lcrypto \
 && apt-get purge -y --auto-remove gcc libc6-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/* \
 && python -c "import workers.load._fastloop" \
 && python -m compileall -q tlsaudit workers manage.py
RUN mkdir -p var && chown -R tlsaudit var \
 && SECRET_KEY=build-only-not-secret-build-only-not-secret ALLOWED_HOSTS=build TLSAUDIT_DEV=0 \
    python manage.py collectstatic --noinput
USER tlsaudit
EXPOSE 8000
# --timeout bounds every request; IDEMPOTENCY_LEASE_SECONDS (45) must stay above it.
CMD ["gunicorn", "tlsaudit.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "30", "--access-logfile", "-"]
