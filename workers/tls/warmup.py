"""Pay sslyze's start-up costs once per worker process (Celery worker_process_init)."""

from __future__ import annotations

import warnings

from workers.tls.certs import load_anchors

# The bundled trust stores contain roots with negative serial numbers; the warning is noise.
_SERIAL_WARNING = "Parsed a serial number which wasn't positive"


def filter_sslyze_warnings() -> None:
    warnings.filterwarnings("ignore", message=f".*{_SERIAL_WARNING}.*")


def warm_up() -> None:
    """Import sslyze (~0.45 s) and parse the bundled trust stores (its singleton is not thread-safe)."""
    filter_sslyze_warnings()
    import sslyze  # noqa: F401
    from sslyze.plugins.certificate_info.trust_stores.trust_store_repository import TrustStoresRepository

    for store in TrustStoresRepository.get_default().get_all_stores():
        load_anchors(store.path)
