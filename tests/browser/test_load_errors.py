"""Whose fault a failed page load is, in the words the probe shows (workers/browser/errors.py)."""

import pytest

from workers.browser.errors import classify_load_error


@pytest.mark.parametrize("name, words", [
    ("ERR_NETWORK_CHANGED", "The network of the machine running the probe changed during the load"),
    ("ERR_CONNECTION_RESET", "The connection to site.test:443 failed (ERR_CONNECTION_RESET)."),
    ("ERR_CONNECTION_REFUSED", "The server refused the connection (site.test:443)."),
])
def test_a_failed_load_says_whose_doing_it_was(name, words):
    error = classify_load_error(f"Error: Page.goto: net::{name} at https://site.test/", host="site.test", port=443,
                                timeout_s=30)
    assert error.code in ("connection_failed", "refused") and error.message.startswith(words), error.message
    assert name != "ERR_NETWORK_CHANGED" or "not the site's doing" in error.message
