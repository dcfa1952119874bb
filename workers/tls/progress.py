"""Progress statuses passed to the engine's on_progress(check_name, status)."""

STARTED, DONE, ERROR, SKIPPED = "started", "done", "error", "skipped"
