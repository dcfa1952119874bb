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
RUN mkdir -p var && chown -R tlsaudit var \
 && SECRET_KEY=build-only-not-secret-build-only-not-secret ALLOWED_HOSTS=build TLSAUDIT_DEV=0 \
    python manage.py collectstatic --noinput
USER tlsaudit
EXPOSE 8000
# --timeout bounds every request; IDEMPOTENCY_LEASE_SECONDS (45) must stay above it.
CMD ["gunicorn", "tlsaudit.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "30", "--access-logfile", "-"]
