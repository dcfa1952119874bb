"""What the probe page says about the page it loaded (#30 item 11: "http:// redirected" for a port that
does not redirect)."""

from tlsaudit.probes.presenters import page_facts


def load(variant: str, chain: list[str]) -> dict:
    return {"variant": variant, "ok": True, "redirect_chain": chain, "mixed_content": []}


def test_a_page_served_where_it_was_asked_is_not_a_redirect():
    assert page_facts([load("http", ["http://lab.test:8080/"])])["http_redirects"] == []


def test_a_redirect_lists_every_hop():
    chain = ["http://lab.test/", "https://lab.test/"]
    assert page_facts([load("http", chain), load("https", ["https://lab.test/"])])["http_redirects"] == chain
