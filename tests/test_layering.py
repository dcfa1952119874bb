"""The dependency direction from STYLE.md: domain imports nothing of ours; engines import
only domain; Django apps never import the engines (the web process must not load sslyze)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ("tlsaudit", "workers")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n.split(".")[0] in OURS}


def modules_under(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


def test_domain_imports_only_domain():
    for path in modules_under("tlsaudit/domain"):
        bad = {n for n in imports_of(path) if not n.startswith("tlsaudit.domain")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_domain_imports_no_django_nor_network_libraries():
    forbidden = ("django", "socket", "ssl", "sslyze", "nassl", "requests", "celery")
    for path in modules_under("tlsaudit/domain"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for mod in mods:
                    assert mod.split(".")[0] not in forbidden, f"{path.relative_to(ROOT)} imports {mod}"


def test_engines_import_only_domain():
    for folder in ("workers/tls", "workers/load", "workers/browser"):
        if not (ROOT / folder).exists():
            continue
        for path in modules_under(folder):
            engine = folder.split("/")[1]
            # workers.net: name resolution, the SSRF guard and TargetError, the one network package engines share.
            bad = {n for n in imports_of(path)
                   if not n.startswith(("tlsaudit.domain", f"workers.{engine}", "workers.net"))}
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_django_apps_do_not_import_engines_at_module_level():
    engines = ("workers.tls", "workers.load", "workers.browser", "sslyze", "playwright")
    for path in modules_under("tlsaudit"):
        if "domain" in path.parts or "management" in path.parts:
            continue  # management commands are CLIs that run engines on purpose
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: a lazy import inside a function is fine
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(engines), f"{path.relative_to(ROOT)} imports {node.module}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith(engines), f"{path.relative_to(ROOT)} imports {alias.name}"


def test_the_shared_network_package_imports_only_domain():
    """Engines and web apps import workers.net, so it must stay a leaf: no engine, no Django app."""
    for path in modules_under("workers/net"):
        bad = {n for n in imports_of(path) if not n.startswith(("tlsaudit.domain", "workers.net"))}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
