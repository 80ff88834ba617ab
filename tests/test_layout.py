"""The house keeps its shape: the import graph is read from the source (ast), never by importing it; imports
inside functions count like any other, so a lazy import cannot dodge the order.

The families stand on the floors `docs/architecture.md` draws (`FLOORS`): every import between two families runs
down, none sideways or up, and no family imports another in a circle. No import cycle among project modules;
`chatbot/` never imports `harness`; the shared package `pdfrag/` imports neither
(nor loads either when all of it is imported); the system seam
(`harness/systems/interface.py`) imports nothing from the chatbot, nor do the sweep and the run settings in any
form (at most 12 harness modules do); `harness/evaluate.py` asks a system what it is
instead of testing the `--system` string; no module imports a command module of `harness/cli/` (what commands
share lives in modules that register none); `harness/` keeps at most 24 top-level entries; and one name per meaning
(one `Citation`, one `_Record` base, one `check_quote` and one argument order for the two quote checks, one
definition each for the names that once held two meanings); nothing imports upward;
`pyproject.toml` declares what the code imports directly; no tracked file cites a document outside the
repository (a developer's notes beside it), which no reader of the repository can open.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PACKAGES = ("pdfrag", "chatbot", "harness")
# The families, from the top floor down (docs/architecture.md, "The floors"). A family is a folder of harness/, a
# flat module of it, or a whole package; a package's face (`__init__.py`) only hands names on and is left out.
FLOORS = (("cli",), ("sweep",), ("evaluate", "drafting"), ("report", "judge", "saved"), ("review",), ("summary",),
          ("judged", "rows"), ("metrics",), ("cases",), ("settings",), ("inputs", "runs", "systems"),
          ("stats",), ("errors", "records", "chart"), ("chatbot",), ("pdfrag",))
MAX_HARNESS_ENTRIES = 24
SYSTEM_NAMES = {"chatbot", "offline", "http", "python"}


def _modules(root: Path = REPO) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports (relative imports resolved; `from pkg import mod` is `pkg.mod`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    modules = _modules(root)
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def harness_entries(root: Path = REPO) -> list[str]:
    return sorted(p.name for p in (root / "harness").iterdir() if p.name != "__pycache__")


def test_no_import_cycle_among_project_modules():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_circle():  # so that the test above cannot pass by finding nothing
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_resolves_relative_and_package_imports():
    graph = import_graph()
    assert graph["harness.systems.interface"] == {"harness.records"}  # `from ..records import ...`
    assert graph["harness.inputs"] == {"harness.errors", "pdfrag.text"}  # `from .errors import InputError`, absolute
    assert {"harness.systems", "pdfrag", "pdfrag.pdfs"} <= graph["harness.evaluate"]  # a package, absolute ones


def family(module: str) -> str:
    """`harness.review.store` -> review, `harness.summary` -> summary, `pdfrag.text` -> chatbot."""
    parts = module.split(".")
    return parts[0] if parts[0] != "harness" or len(parts) == 1 else parts[1]


def family_arrows(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(family, family it imports) -> the module imports behind that arrow; faces (`__init__`) left out."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for module, deps in graph.items():
        if module in ("pdfrag", "chatbot", "harness") or _MODULES[module].name == "__init__.py":
            continue
        for dep in deps:
            if family(module) != family(dep):
                arrows.setdefault((family(module), family(dep)), []).append(f"{module} -> {dep}")
    return arrows


def wrong_way(arrows: dict[tuple[str, str], list[str]], floors=FLOORS) -> list[str]:
    """Every arrow that does not run down to a lower floor, or names a family no floor holds."""
    floor = {name: i for i, names in enumerate(floors) for name in names}
    bad = []
    for (a, b), why in sorted(arrows.items()):
        if a not in floor or b not in floor:
            bad.append(f"{a if a not in floor else b}: on no floor of FLOORS (add it, and to docs/architecture.md)")
        elif floor[a] >= floor[b]:
            bad.append(f"{a} -> {b} runs {'sideways' if floor[a] == floor[b] else 'up'}: {', '.join(why[:3])}")
    return bad


_MODULES = _modules()


def test_every_family_import_runs_down_the_floors():
    assert wrong_way(family_arrows(import_graph())) == []


def test_no_family_imports_another_in_a_circle():
    families: dict[str, set[str]] = {}
    for a, b in family_arrows(import_graph()):
        families.setdefault(a, set()).add(b)
    assert cycles(families) == []


def test_the_floor_check_sees_an_arrow_up_and_sideways():  # so that the tests above cannot pass by seeing nothing
    arrows = {("judged", "review"): ["harness.judged -> harness.review.book"], ("report", "saved"): ["x -> y"],
              ("cli", "sweep"): ["harness.cli.sweep -> harness.sweep.run"], ("new", "records"): ["n -> r"]}
    assert wrong_way(arrows) == ["judged -> review runs up: harness.judged -> harness.review.book",
                                 "new: on no floor of FLOORS (add it, and to docs/architecture.md)",
                                 "report -> saved runs sideways: x -> y"]
    assert ("judge", "drafting") not in family_arrows(import_graph())  # the judge asks through pdfrag/asking.py


def test_nothing_imports_upward():
    """Only the CLI layer imports the CLI, and no module imports a package it sits in (its `__init__`), but a
    package's `__main__`, which runs it."""
    upward = [(m, t) for m, deps in import_graph().items() for t in deps
              if (t.startswith("harness.cli") and not m.startswith("harness.cli"))
              or (m.startswith(t + ".") and m != t + ".__main__")]
    assert upward == []


def command_modules(root: Path = REPO) -> set[str]:
    """The modules of `harness/cli/` that register a sub-command (a top-level `register`); the others (common,
    flags, the terminal walks) are what the commands share."""
    return {f"harness.cli.{path.stem}" for path in sorted((root / "harness" / "cli").glob("*.py"))
            if any(isinstance(node, ast.FunctionDef) and node.name == "register"
                   for node in ast.parse(path.read_text(encoding="utf-8")).body)}


def commands_imported(graph: dict[str, set[str]], commands: set[str]) -> list[str]:
    """`importer -> command module` for every import of a command module: what two commands share lives in a
    module that registers none, so no command is another's library."""
    return sorted(f"{m} -> {t}" for m, deps in graph.items() for t in deps if t in commands)


def test_no_module_imports_a_command_module():
    from harness.cli import _COMMANDS
    commands = command_modules()
    assert commands == {f"harness.cli.{name}" for name in _COMMANDS}  # every sub-command, and only those
    assert commands_imported(import_graph(), commands) == []


def test_the_command_check_sees_a_command_imported(tmp_path):  # so that the test above cannot pass by seeing nothing
    (tmp_path / "harness" / "cli").mkdir(parents=True)
    for name, text in {"run.py": "def register(sub): pass\n", "flags.py": "def add_quiet(p): pass\n",
                       "sweep.py": "from .run import x\ndef register(sub): pass\n"}.items():
        (tmp_path / "harness" / "cli" / name).write_text(text, encoding="utf-8")
    commands = command_modules(tmp_path)
    assert commands == {"harness.cli.run", "harness.cli.sweep"}
    graph = {"harness.cli.sweep": {"harness.cli.run", "harness.cli.flags"}, "harness.cli.run": {"harness.cli.flags"}}
    assert commands_imported(graph, commands) == ["harness.cli.sweep -> harness.cli.run"]


def test_chatbot_never_imports_harness():
    graph = import_graph()
    wrong = {m: sorted(t for t in deps if t.startswith("harness")) for m, deps in graph.items()
             if m.startswith("chatbot")}
    assert {m: t for m, t in wrong.items() if t} == {}


def test_the_system_seam_imports_nothing_from_the_chatbot():
    deps = import_graph()["harness.systems.interface"]
    assert sorted(d for d in deps if d.startswith("chatbot")) == []
    source = (REPO / "harness" / "systems" / "interface.py").read_text(encoding="utf-8")
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert not names & {"HostPool", "OllamaClient", "Answer"}


def _system_string_tests(path: Path) -> list[str]:
    """Where `path` compares something with a system's name or `.system`, or tests `startswith("http...")`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            strings = {c.value for o in operands for c in ast.walk(o) if isinstance(c, ast.Constant)
                       and isinstance(c.value, str)}
            attributes = {o.attr for o in operands if isinstance(o, ast.Attribute)}
            if strings & SYSTEM_NAMES or "system" in attributes:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
            if "http" in ast.unparse(node):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Name) and node.id in ("is_builtin", "BUILTIN"):
            found.append(f"line {node.lineno}: {node.id}")
    return found


def test_evaluate_asks_the_system_instead_of_testing_its_name():
    assert _system_string_tests(REPO / "harness" / "evaluate.py") == []


def test_the_name_test_detector_sees_name_tests(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('if s.system == "x": pass\nif name in ("chatbot", "offline"): pass\n'
                      'if spec.startswith(("http://", "https://")): pass\nok = is_builtin(spec)\n')
    assert [f.split(":")[0] for f in _system_string_tests(sample)] == ["line 1", "line 2", "line 3", "line 4"]


def test_every_family_face_hands_on_names_that_exist():
    import importlib
    for package in sorted(m for m, p in _MODULES.items() if p.name == "__init__.py"):
        face = importlib.import_module(package)
        missing = [n for n in getattr(face, "__all__", ()) if not hasattr(face, n)]
        assert missing == [], f"{package}.__all__ names what it does not have: {missing}"
        if package.count(".") == 1 and family(package) in {f for floor in FLOORS for f in floor}:
            assert face.__doc__ and getattr(face, "__all__", None), f"{package}: say what the family offers"


def test_harness_top_level_stays_small():
    entries = harness_entries()
    assert len(entries) <= MAX_HARNESS_ENTRIES, entries


def _definitions(kind: type, name: str) -> list[tuple[str, ast.AST]]:
    out = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kind) and getattr(node, "name", None) == name:
                out.append((module, node))
    return out


def test_one_name_per_meaning():
    assert [m for m, _ in _definitions(ast.ClassDef, "Citation")] == ["harness.records.answers"]
    assert [m for m, _ in _definitions(ast.ClassDef, "_Record")] == ["harness.records.base"]
    quote_checks = [*_definitions(ast.FunctionDef, "check_quote"), *_definitions(ast.FunctionDef, "check_draft_quote")]
    assert [m for m, _ in quote_checks] == ["pdfrag.citations", "harness.drafting.verify"]
    for module, node in quote_checks:
        assert [a.arg for a in node.args.args[:2]] == ["source_id", "quote"], module
    # Two meanings once shared these names (#42): each now has a name of its own, and the old names none.
    for old in ("Judging", "Problems", "judge_prompt", "answer_key"):
        assert _definitions(ast.ClassDef, old) + _definitions(ast.FunctionDef, old) == [], old
    for kind, name in ((ast.ClassDef, "ScoringRules"), (ast.ClassDef, "FileProblems"), (ast.ClassDef, "SavedProblems"),
                       (ast.FunctionDef, "judge_template"), (ast.FunctionDef, "judge_prompt_sha256"),
                       (ast.FunctionDef, "reply_key"), (ast.FunctionDef, "review_key")):
        assert len(_definitions(kind, name)) == 1, name


def test_pyproject_declares_what_the_code_imports_directly():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {d.split(">")[0].split("=")[0].split(";")[0].strip().lower() for d in project["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    outside = {name for name in imported if name not in sys.stdlib_module_names and name not in PACKAGES}
    needed = {dist.lower() for name in outside for dist in distributions.get(name, [name])}
    assert sorted(needed - declared) == []


def test_every_test_has_a_timeout(pytestconfig):
    """No run of the suite can hang: pytest-timeout is in the test extra and a per-test timeout is configured."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(req.startswith("pytest-timeout") for req in project["project"]["optional-dependencies"]["test"])
    assert 0 < float(pytestconfig.getini("timeout")) <= 600
    assert pytestconfig.pluginmanager.hasplugin("timeout")


# Documents kept beside the repository for its developers, which its readers cannot open: the folder and each
# document's name, written in pieces so that this file does not cite them itself.
_OUTSIDE = re.compile("|".join(re.escape(name.replace("|", "")) for name in (
    "../sh|ared/", "sh|ared/engine.md", "sh|ared/openai-api.md", "sh|ared/ollama-api.md")) + "|" + r"(?<![\w/-])(?:"
    + "|".join(re.escape(name.replace("|", "")) for name in ("eng|ine.md", "openai-ap|i.md", "ollama-ap|i.md",
                                                             "DES|IGN.md", "STY|LE.md")) + ")")


def outside_citations(paths: list[Path], root: Path = REPO) -> list[str]:
    """`path:line: text` of each line that cites a document outside the repository."""
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files (PDFs, images) cite nothing
        found += [f"{path.relative_to(root)}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
                  if _OUTSIDE.search(line)]
    return found


def test_no_tracked_file_cites_a_document_outside_the_repository():
    """Facts about engines and APIs are stated where they are used, or in docs/ (issue #44 item 9)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    paths = [REPO / name for name in listed.decode("utf-8").split("\0") if name]
    assert len(paths) > 100  # the repository's files, not an empty listing
    assert outside_citations(paths) == []


def test_the_citation_check_sees_each_form(tmp_path):  # so that the test above cannot pass by seeing nothing
    names = ["../sh" "ared/x.md", "/work/sh" "ared/engine.md", "(ollama-ap" "i.md §10)", "DES" "IGN.md",
             "see STY" "LE.md", "openai-ap" "i.md §4", "sh" "ared/openai-api.md"]
    files = []
    for i, name in enumerate(names + ["docs/backends.md", "my-engine.md and nothing else"]):
        files.append(tmp_path / f"f{i}.py")
        files[-1].write_text(f"x = 1\n# {name}\n", encoding="utf-8")
    assert [hit.split(":")[0] for hit in outside_citations(files, tmp_path)] == [f"f{i}.py" for i in range(len(names))]


def shared_package_reaches(root: Path = REPO) -> dict[str, list[str]]:
    """Module of pdfrag -> what of `chatbot` or `harness` it imports (any import, those inside functions and under
    TYPE_CHECKING included) or names in a string that is a dotted path of theirs (`import_module("chatbot.x")`)."""
    modules = _modules(root)
    halves = re.compile(r"^(chatbot|harness)(\.\w+)*$")
    out = {}
    for module, path in modules.items():
        if module.split(".")[0] != "pdfrag":
            continue
        strings = {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(n, ast.Constant) and isinstance(n.value, str) and halves.match(n.value)}
        found = sorted({d for d in _imports(module, path, set(modules)) if halves.match(d)} | strings)
        if found:
            out[module] = found
    return out


def test_the_shared_package_imports_neither_half():
    assert shared_package_reaches() == {}


def test_the_shared_package_check_sees_imports_and_names(tmp_path):  # so that the test above cannot see nothing
    tree = {"pdfrag": {"__init__.py": "", "a.py": "def f():\n    from chatbot import b\n",
                       "c.py": "import importlib\nimportlib.import_module('harness.x')\n"},
            "chatbot": {"__init__.py": "", "b.py": ""}, "harness": {"__init__.py": "", "x.py": ""}}
    for package, files in tree.items():
        (tmp_path / package).mkdir()
        for name, text in files.items():
            (tmp_path / package / name).write_text(text, encoding="utf-8")
    assert shared_package_reaches(tmp_path) == {"pdfrag.a": ["chatbot.b"], "pdfrag.c": ["harness.x"]}


def test_importing_all_of_the_shared_package_loads_neither_half():
    code = ("import importlib, pkgutil, sys, pdfrag\n"
            "for m in pkgutil.iter_modules(pdfrag.__path__, 'pdfrag.'): importlib.import_module(m.name)\n"
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('chatbot', 'harness')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "[]"


_LOADERS = {"import_module", "__import__", "lazy_exports"}  # calls that import a module named by a string


def bot_imports(module: str, path: Path, known: set[str]) -> list[str]:
    """What of `chatbot` the module `module` imports in any form: an import statement anywhere (inside functions
    and under TYPE_CHECKING too), or a module named by a string to `import_module`, `__import__` or
    `lazy_exports` (`import_module("chatbot.index")`)."""
    bot = re.compile(r"^chatbot(\.\w+)*$")
    named = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in _LOADERS and isinstance(node.args[0].value, str) and bot.match(node.args[0].value):
                named.add(node.args[0].value)
    return sorted({d for d in _imports(module, path, known) if bot.match(d)} | named)


def modules_on_the_bot(root: Path = REPO) -> dict[str, list[str]]:
    """Module of harness -> what of `chatbot` it imports (`bot_imports`), for those that import any."""
    modules = _modules(root)
    found = {m: bot_imports(m, p, set(modules)) for m, p in modules.items() if m.split(".")[0] == "harness"}
    return {m: deps for m, deps in found.items() if deps}


# Only the modules that load or describe the bundled system import it (issue #42): never the sweep (it asks each
# system to count its calls) nor the run settings (the bot's settings are declared by the bot, carried by name).
NEVER_ON_THE_BOT = ("harness.sweep", "harness.settings", "harness.drafting.settings")
MOST_MODULES_ON_THE_BOT = 12


def test_the_sweep_and_the_run_settings_import_nothing_of_the_chatbot():
    on_the_bot = modules_on_the_bot()
    assert {m: deps for m, deps in on_the_bot.items()
            if any(m == n or m.startswith(n + ".") for n in NEVER_ON_THE_BOT)} == {}
    assert len(on_the_bot) <= MOST_MODULES_ON_THE_BOT, sorted(on_the_bot)


def test_the_bot_import_check_sees_every_form(tmp_path):  # so that the test above cannot pass by seeing nothing
    tree = {"chatbot": {"__init__.py": "", "index.py": "", "answer.py": ""},
            "harness": {"__init__.py": "", "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                   "    from chatbot.index import Index\n",
                        "b.py": "def f():\n    import chatbot.answer\n",
                        "c.py": "import importlib\nm = importlib.import_module('chatbot.index')\n",
                        "d.py": "from pdfrag.lazy import lazy_exports\nx = lazy_exports('chatbot', {})\n",
                        "e.py": "SYSTEM = 'chatbot'\nif SYSTEM == 'chatbot.index': pass\n"}}
    for package, files in tree.items():
        (tmp_path / package).mkdir()
        for name, text in files.items():
            (tmp_path / package / name).write_text(text, encoding="utf-8")
    assert modules_on_the_bot(tmp_path) == {"harness.a": ["chatbot.index"], "harness.b": ["chatbot.answer"],
                                            "harness.c": ["chatbot.index"], "harness.d": ["chatbot"]}


# Top-level public names defined in more than one module, each with one meaning wherever it is defined (#42).
SAME_MEANING = {
    "register": "a command module's `rag-eval` sub-command", "run": "a command module's action",
    "walk": "a terminal walk of one review", "walk_disagreements": "a terminal walk of the disagreements",
    "export_csv": "a review sheet written for a spreadsheet", "import_csv": "that sheet read back",
    "load_config": "a settings TOML file read", "resolve": "settings resolved as flag, then config, then default",
    "main": "a command line's entry point (rag-chat, rag-eval)", "build_parser": "that command line's parser",
}


def _public_definitions() -> dict[str, list[str]]:
    """Top-level public functions and classes of pdfrag, chatbot and harness -> the modules that define them."""
    found: dict[str, list[str]] = {}
    for module, path in _modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(module)
    return found


def test_a_name_defined_in_two_modules_means_one_thing():
    shared = {name for name, modules in _public_definitions().items() if len(modules) > 1}
    assert shared - set(SAME_MEANING) == set(), ("defined in more than one module with no shared meaning: name "
                                                 "each after what it does, or add the meaning to SAME_MEANING")
    assert set(SAME_MEANING) - shared == set()  # no stale entry
