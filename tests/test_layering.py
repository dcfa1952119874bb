"""The dependency direction from STYLE.md: domain imports nothing of ours; engines import
only domain; Django apps never import the engines (the web process must not load sslyze)."""

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ("tlsaudit", "workers")


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    """Each module parsed once for all the checks below (they walk the same files)."""
    return ast.parse(path.read_text(), filename=str(path))


def imports_of(path: Path) -> set[str]:
    tree = parsed(path)
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
        tree = parsed(path)
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
        tree = parsed(path)
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


# ---------------------------------------------------------------------------------------------------------
# The whole import graph of our modules, lazy imports included (#20): a function-level import is an arrow
# like any other, so it can make a cycle or let the web process reach an engine just as well.

LAZY_IMPORT_BUDGET = 30
UPWARD = ("workers.tls", "workers.load", "workers.browser", "workers.tasks")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def our_modules() -> dict[str, Path]:
    return {module_name(p): p for folder in OURS for p in modules_under(folder) if "migrations" not in p.parts}


def nearest_module(name: str, known) -> str | None:
    """`tlsaudit.sites.models.Site` -> `tlsaudit.sites.models`: the longest prefix that is one of our modules."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(node, module: str, path: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        return [f"{node.module}.{alias.name}" for alias in node.names]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1] + ([node.module] if node.module else [])
    return [".".join(base + [alias.name]) for alias in node.names]


def function_body_nodes(tree) -> set[int]:
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside |= {id(sub) for sub in ast.walk(node) if sub is not node}
    return inside


def import_arrows():
    """(importer, imported, lazy, path, line) for every import of one of our modules by another."""
    known = our_modules()
    for module, path in known.items():
        tree = parsed(path)
        inside = function_body_nodes(tree)
        for node in ast.walk(tree):
            for name in imported_names(node, module, path):
                target = nearest_module(name, known) if name.split(".")[0] in OURS else None
                if target and target != module:
                    yield module, target, id(node) in inside, path, node


def cycles(arrows) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative enough for our depth)."""
    graph: dict[str, set[str]] = {}
    for source, target in arrows:
        graph.setdefault(source, set()).add(target)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_cycles_finder_finds_a_known_cycle():
    assert cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]
    assert cycles([("a", "b"), ("b", "c")]) == []


def test_no_import_cycles_among_our_modules_lazy_imports_included():
    found = cycles((source, target) for source, target, *_ in import_arrows())
    assert found == [], f"import cycles: {found}"


def test_web_apps_never_import_engines_or_tasks_not_even_lazily():
    """Only the CLIs (management commands) and the demo run engines inside the web tree on purpose."""
    bad = [f"{path.relative_to(ROOT)}:{node.lineno} imports {target}"
           for source, target, _, path, node in import_arrows()
           if source.startswith("tlsaudit.") and target.startswith(UPWARD)
           and ".management." not in source and not source.startswith("tlsaudit.demo")]
    assert bad == [], "\n".join(bad)


def test_the_web_reaches_the_broker_through_core_queue_only():
    """One door out of the web process: sending, health checks and queue depth all go through core.queue."""
    doors = sorted({source for source, target, _, _, _ in import_arrows()
                    if source.startswith("tlsaudit.") and target.startswith("workers.celery")})
    assert doors == ["tlsaudit.core.queue"], doors


def commented(lines: list[str], node) -> bool:
    """A comment on the import's own lines or on the line just above it."""
    span = lines[node.lineno - 2:(node.end_lineno or node.lineno)]
    return any("#" in line for line in span)


def test_function_level_imports_are_few_and_each_says_why():
    lazy = [(path, node) for _, _, is_lazy, path, node in import_arrows() if is_lazy]
    unique = {(str(path), node.lineno): node for path, node in lazy}
    silent = sorted(f"{path.relative_to(ROOT)}:{node.lineno}" for path, node in lazy
                    if not commented(path.read_text().splitlines(), node))
    assert len(unique) <= LAZY_IMPORT_BUDGET, f"{len(unique)} imports of our modules inside functions"
    assert silent == [], "function-level imports without a comment saying why:\n" + "\n".join(silent)


TASK_MODULE_MAX_LINES = 200


def test_task_modules_stay_thin():
    """#20: a task says what to run and where to store it; plans, messages and merges live with their owners."""
    long = {str(path.relative_to(ROOT)): lines for path in modules_under("workers/tasks")
            if (lines := len(path.read_text().splitlines())) > TASK_MODULE_MAX_LINES}
    assert long == {}, f"task modules over {TASK_MODULE_MAX_LINES} lines: {long}"


MODEL_SIGNALS = {"pre_save", "post_save", "pre_delete", "post_delete", "m2m_changed", "pre_init", "post_init"}
# Receivers of model signals allowed, each with the reason it cannot be a call from a service.
MODEL_RECEIVERS = {
    ("tlsaudit/monitoring/signals.py", "drop_beat_entry"):
        "a site's deletion cascades to its schedule inside PostgreSQL, where no model or service code runs",
}


def model_receivers(path: Path, root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, function) of every receiver of a model signal: `@receiver(post_save, ...)` or `post_save.connect(f)`."""
    found = set()
    relative = path.relative_to(root).as_posix()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "receiver"
                        and decorator.args and _signal_names(decorator.args[0]) & MODEL_SIGNALS):
                    found.add((relative, node.name))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect"
              and _signal_names(node.func.value) & MODEL_SIGNALS):
            target = node.args[0] if node.args else None
            found.add((relative, getattr(target, "id", getattr(target, "attr", "?"))))
    return found


def _signal_names(node) -> set[str]:
    if isinstance(node, (ast.List, ast.Tuple)):
        return set().union(*(_signal_names(n) for n in node.elts))
    return {getattr(node, "id", getattr(node, "attr", ""))}


def test_model_signal_receivers_are_only_the_allowed_ones():
    """Business logic is called from services, not hidden in a receiver (saleor's rule; issue #32 item 5):
    a new site's schedule comes from tlsaudit/sites/services.py. The few receivers left say why."""
    found = set().union(*(model_receivers(p) for folder in OURS for p in modules_under(folder)))
    assert found == set(MODEL_RECEIVERS), f"receivers of model signals not in the allow-list: {found - set(MODEL_RECEIVERS)}"


def test_the_receiver_finder_finds_both_spellings(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("@receiver(post_save, sender=X)\ndef a(**kw): pass\n\npost_delete.connect(b, sender=Y)\n"
                      "@receiver(user_logged_in)\ndef c(**kw): pass\n")
    assert model_receivers(module, root=tmp_path) == {("m.py", "a"), ("m.py", "b")}


def test_no_test_module_imports_a_conftest_and_nothing_is_star_imported():
    """Helpers live in tests/support/, fixtures in fixture modules registered once in tests/conftest.py's
    pytest_plugins (issue #32 item 3): a conftest is pytest's to load, not a module to import from."""
    offenders = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module.split(".")[-1] == "conftest" or any(a.name == "*" for a in node.names)):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module} import ...")
            elif isinstance(node, ast.Import) and any(a.name.split(".")[-1] == "conftest" for a in node.names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} import ...conftest")
    assert offenders == []


# The scan engine's entry points: the only modules outside workers/tls that may import it (#32 item 4).
SCAN_ENGINE_USERS = {
    "workers/tasks/audit.py": "the audit task runs the scan",
    "tlsaudit/audits/management/commands/audit.py": "`manage.py audit` runs the scan",
    "workers/celery.py": "a scan worker warms sslyze up at start (lazily: the web process imports this module)",
}


def test_only_the_scans_entry_points_import_the_tls_engine():
    """The pre-flight handshake, its STARTTLS preludes, deadline sockets and error words are in workers/net:
    the browser task, `manage.py loadtest` and the gate of the run tasks reach a target without loading the
    scan engine. Nothing else imports workers.tls."""
    importers = {path.relative_to(ROOT).as_posix() for folder in OURS for path in modules_under(folder)
                 if not path.is_relative_to(ROOT / "workers" / "tls")
                 and any(name == "workers.tls" or name.startswith("workers.tls.") for name in all_imports_of(path))}
    assert importers == set(SCAN_ENGINE_USERS)


def all_imports_of(path: Path) -> set[str]:
    """Every module `path` imports, at module level or inside a function."""
    names = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


ISSUE_REFERENCE = re.compile(r"(?<![\w/])(?:issues? #?\d{1,3}\b|#\d{1,2}\b(?! ?v\d))", re.IGNORECASE)


def test_comments_do_not_tell_the_issue_history():
    """Which issue asked for a line is git's and docs/decisions.md's to say, not the code's (#32 item 10):
    no comment or docstring of ours names one of our issues (an upstream project's issue may be named)."""
    found = []
    for folder in OURS:
        for path in modules_under(folder):
            if "migrations" in path.parts:
                continue
            for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
                text = token.string
                if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and text.startswith('"""')):
                    found += [f"{path.relative_to(ROOT)}:{token.start[0]}: {m.group(0)}"
                              for m in ISSUE_REFERENCE.finditer(text.replace("PKCS#1", ""))
                              if "sslyze issue" not in text]
    assert found == []
