"""The docs a newcomer walks: README.md and docs/*.md (issue #18 item 7).

- Every shell block says whether it runs here (issue #30 item 3): its info string is `sh runnable` (no model
  server), `sh runnable server` (against the test server), or `sh skip: REASON` (a synopsis with placeholders, or
  a block that needs a real engine, a GPU or an install), and nothing else.
- The runnable blocks are run with bash (`-e -o pipefail`), the blocks of one file in order, in one temporary
  folder holding a copy of what they need (sample_docs/, examples/, evaluate_rag.py), with this venv first on
  PATH, the folder as HOME and cache, stdin empty, and OLLAMA_HOST pointing at a port where nothing listens (a
  block that needs a model server fails fast instead of finding one) or, for `sh runnable server`, at the test
  server (tests/fake_ollama.py) following `docs_rule`: not a model. Every block must exit 0.
- Every relative link points to an existing file (and heading); every repository path and every
  `harness.…`/`chatbot.…` name the docs give in backticks exists.
- README.md stays a front door: at most 200 non-empty lines, the two set-up commands `.ci/run` relies on first.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fake_ollama import ChatReply, FakeOllama, overlap_rule
from tests.support.draft_rules import draft_rule
from tests.support.judge_rules import judge_rule

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the project depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
MARKER = "sh runnable"
SERVER_MARKER = "sh runnable server"
_SKIP = re.compile(r"^sh skip: \S")
SHELLS = {"sh", "bash", "shell", "console", "zsh"}
PAGES = ["README.md", "chatbot.md", "evaluate.md", "your-system.md", "compare-and-report.md", "review.md",
         "drafting.md", "sweeps.md", "architecture.md", "metrics.md", "scale.md", "backends.md", "judge.md",
         "hardening.md", "hardening-inputs.md", "daily.md", "daily-compare.md", "what-the-checks-catch.md"]
COPIED = ["sample_docs", "examples", "evaluate_rag.py"]  # what the runnable blocks may use, copied per file
BLOCK_TIMEOUT_S = 600  # a hang, not a slow machine: the blocks take seconds on an idle one


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


NO_SERVER = f"http://127.0.0.1:{_closed_port()}"  # a block that needs a model server fails there at once


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.glob("*.md"))]


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    info: str
    code: str


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*(.*)$")


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced code block of a Markdown text, with its info string and the line of its opening fence."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, body, j = opening.group(1), [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}):
            body.append(lines[j])
            j += 1
        blocks.append(Block(i + 1, opening.group(2).strip(), "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def runnable_blocks(text: str) -> list[Block]:
    return [b for b in fenced_blocks(text) if b.info in (MARKER, SERVER_MARKER)]


def unmarked_shell_blocks(text: str, name: str) -> list[str]:
    """`name:line: info` of each shell block that neither runs here nor says why not (`sh skip: REASON`)."""
    return [f"{name}:{b.line}: ```{b.info}" for b in fenced_blocks(text)
            if b.info.split(" ", 1)[0] in SHELLS and b.info not in (MARKER, SERVER_MARKER) and not _SKIP.match(b.info)]


def docs_rule(body: dict) -> ChatReply | str | dict:
    """The test server's rule for `sh runnable server` blocks: a judge prompt (harness/prompts/judge.txt) gets the
    scripted judge, a drafting prompt the drafting script of the handbook (tests/support/draft_rules.py), anything
    else (a question about the documents) the overlap rule."""
    content = next((m["content"] for m in reversed(body.get("messages") or []) if m.get("role") == "user"), "")
    if "\nClaims:\n" in content and "\nPassages:\n" in content:
        return judge_rule()(body)
    if any(mark in content for mark in ("[page start]", "No documents are available", "does not mention",
                                        "does\nnot mention")):
        return draft_rule(body)
    return overlap_rule(body)


def run_blocks(blocks: list[Block], folder: Path, name: str, *, server_url: str | None = None) -> list[str]:
    """Run `blocks` in order in `folder`; one message per failing block (its file and line, exit code, output).
    `sh runnable server` blocks get OLLAMA_HOST=`server_url`, the others a port where nothing listens."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PDF_RAG_EVAL_CACHE": str(folder / ".cache"), "HOME": str(folder), "OLLAMA_HOST": NO_SERVER}
    failures = []
    for block in blocks:
        if block.info == SERVER_MARKER and server_url is None:
            failures.append(f"{name}:{block.line}: a `{SERVER_MARKER}` block, and no test server given")
            continue
        host = server_url if block.info == SERVER_MARKER else NO_SERVER
        try:
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=folder,
                                  env=env | {"OLLAMA_HOST": str(host)}, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            failures.append(f"{name}:{block.line}: still running after {BLOCK_TIMEOUT_S} s")
            continue
        if done.returncode != 0:
            failures.append(f"{name}:{block.line}: exit {done.returncode}\n{block.code}"
                            f"--- stdout (end) ---\n{done.stdout[-1500:]}\n--- stderr (end) ---\n{done.stderr[-1500:]}")
    return failures


def written_into_sample_docs(folder: Path, name: str) -> list[str]:
    """A message naming what the blocks of `name` left in `folder`'s copy of sample_docs/ that the repository's
    has not (reviews, lock files, drafts): the docs' examples write into folders of their own."""
    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}

    added = sorted(files(folder / "sample_docs") - files(REPO / "sample_docs"))
    return [f"{name}: its blocks wrote into sample_docs/: {', '.join(added)}"] if added else []


def _workspace(folder: Path) -> Path:
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.reviews.jsonl"))
        else:
            shutil.copy2(source, folder / name)
    return folder


# -- the runnable blocks -----------------------------------------------------------------------------------------
def _with_blocks() -> list[Path]:
    return [p for p in doc_files() if runnable_blocks(p.read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def block_failures(tmp_path_factory) -> dict[Path, list[str]]:
    """Every file's runnable blocks, run once for the module: the files side by side (one per core), each in
    its own folder; the blocks of one file in order; the server blocks of all files against one test server."""
    with FakeOllama() as server:
        server.chat_rule = docs_rule

        def run(path: Path) -> list[str]:
            folder = _workspace(tmp_path_factory.mktemp(path.stem))
            name = str(path.relative_to(REPO))
            failures = run_blocks(runnable_blocks(path.read_text(encoding="utf-8")), folder, name,
                                  server_url=server.url)
            return failures + written_into_sample_docs(folder, name)

        paths = _with_blocks()
        with ThreadPoolExecutor(max_workers=max(1, min(len(paths), os.cpu_count() or 1))) as pool:
            return dict(zip(paths, pool.map(run, paths)))


@pytest.mark.parametrize("path", _with_blocks(), ids=lambda p: str(p.relative_to(REPO)))
def test_runnable_blocks_exit_0(path, block_failures):
    assert not block_failures[path], "\n\n".join(block_failures[path])


def test_every_shell_block_runs_here_or_says_why_not():
    assert [u for p in doc_files() for u in unmarked_shell_blocks(p.read_text(encoding="utf-8"),
                                                                   str(p.relative_to(REPO)))] == []


def test_an_unmarked_block_or_a_skip_without_a_reason_is_found():
    text = ("```sh\nls\n```\n```sh skip:\nls\n```\n```sh skip: needs a GPU\nls\n```\n```bash\nls\n```\n"
            "```sh runnable server\nls\n```\n```python\nx = 1\n```\n")
    assert unmarked_shell_blocks(text, "d.md") == ["d.md:1: ```sh", "d.md:4: ```sh skip:", "d.md:10: ```bash"]


def test_a_server_block_runs_against_the_test_server(tmp_path):
    (tmp_path / "d").mkdir()
    shutil.copy2(REPO / "sample_docs" / "handbook.pdf", tmp_path / "d")
    block = Block(1, SERVER_MARKER, 'rag-chat ask "How many days of annual leave?" --docs d\n')
    with FakeOllama() as server:
        server.chat_rule = docs_rule
        assert run_blocks([block], tmp_path, "docs/x.md", server_url=server.url) == []
        assert server.chat_bodies()
    assert run_blocks([block], tmp_path, "docs/x.md") == ["docs/x.md:1: a `sh runnable server` block, and no "
                                                          "test server given"]


def test_the_commands_that_need_no_server_are_run():
    """The blocks the issue names are marked, so the docs test really runs them."""
    code = "".join(b.code for p in doc_files() for b in runnable_blocks(p.read_text(encoding="utf-8")))
    for command in ("python evaluate_rag.py --offline", "rag-eval score", "rag-eval compare", "rag-eval report",
                    "rag-eval --help", "rag-eval check", "rag-eval review", "rag-eval rescore", "rag-eval sweep",
                    "rag-chat pages", "--system examples.bm25_pages:make_system"):
        assert command in code, f"no runnable block runs {command!r}"
    assert runnable_blocks((REPO / "README.md").read_text(encoding="utf-8")), "the README's tour is not marked"


def test_fenced_blocks_are_found_with_their_marker_and_line():
    text = ("# t\n\n```sh runnable\necho one\n```\n\n```sh\nollama serve\n```\n\n````md\n```sh runnable\n"
            "inside\n```\n````\n~~~sh runnable\necho two\n~~~\n")
    assert [(b.line, b.info) for b in fenced_blocks(text)] == [(3, "sh runnable"), (7, "sh"), (11, "md"),
                                                               (16, "sh runnable")]
    assert [b.code for b in runnable_blocks(text)] == ["echo one\n", "echo two\n"]


def test_a_failing_block_is_reported_with_its_file_and_line(tmp_path):
    blocks = [Block(3, MARKER, "true\n"), Block(9, MARKER, "echo out; echo err >&2; exit 3\n"),
              Block(15, MARKER, "false | cat\n"), Block(20, MARKER, "python -c 'import sys; sys.exit(2)'\n")]
    failures = run_blocks(blocks, tmp_path, "docs/x.md")
    assert [f.split("\n", 1)[0] for f in failures] == ["docs/x.md:9: exit 3", "docs/x.md:15: exit 1",
                                                       "docs/x.md:20: exit 2"]
    assert "out" in failures[0] and "err" in failures[0]


def test_a_block_writing_into_sample_docs_is_found(tmp_path):
    shutil.copytree(REPO / "sample_docs", tmp_path / "sample_docs", ignore=shutil.ignore_patterns("__pycache__"))
    assert written_into_sample_docs(tmp_path, "docs/x.md") == []
    (tmp_path / "sample_docs" / "cases.reviews.jsonl.lock").write_text("")
    assert written_into_sample_docs(tmp_path, "docs/x.md") == [
        "docs/x.md: its blocks wrote into sample_docs/: cases.reviews.jsonl.lock"]


def test_a_block_that_needs_a_model_server_fails(tmp_path):
    (tmp_path / "d").mkdir()
    shutil.copy2(REPO / "sample_docs" / "handbook.pdf", tmp_path / "d")
    failures = run_blocks([Block(1, MARKER, "rag-chat index d --out idx\n")], tmp_path, "README.md")
    assert len(failures) == 1 and "no Ollama server answered at " + NO_SERVER in failures[0]


# -- links, paths and names --------------------------------------------------------------------------------------
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (but - and _), spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def prose(text: str) -> str:
    """`text` with the lines of its fenced blocks blanked, so code is not read as headings or links."""
    lines = text.splitlines()
    for block in fenced_blocks(text):
        for i in range(block.line - 1, min(block.line + block.code.count("\n"), len(lines) - 1) + 1):
            lines[i] = ""
    return "\n".join(lines)


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base, n = slug(heading.group(1)), 0
            while (name := base if n == 0 else f"{base}-{n}") in found:
                n += 1
            found.add(name)
    return found


def broken_links(path: Path, *, root: Path = REPO) -> list[str]:
    """Relative links of `path` to a missing file, or to a heading its Markdown file lacks."""
    where = path.relative_to(root)
    problems = []
    for target in _LINK.findall(prose(path.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            problems.append(f"{where}: link to {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: link to {target} (no such heading)")
    return problems


def test_every_relative_link_points_to_an_existing_file_and_heading():
    assert [p for path in doc_files() for p in broken_links(path)] == []


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# The manual\n\n```md\n# Not a heading\n```\n", encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.write_text("[a](missing.md) [b](README.md#no-such-heading) [c](README.md#the-manual) [d](metrics.md)\n"
                    "[e](https://example.org/x.md) ![img](nothing.png) [f](README.md#not-a-heading) [g](#top)\n"
                    "# Top\n```md\n[h](in-code.md)\n```\n", encoding="utf-8")
    assert broken_links(page, root=tmp_path) == [
        "docs/page.md: link to missing.md (no such file)",
        "docs/page.md: link to README.md#no-such-heading (no such heading)",
        "docs/page.md: link to metrics.md (no such file)",
        "docs/page.md: link to README.md#not-a-heading (no such heading)"]


@pytest.mark.parametrize("heading, anchor", [
    ("Offline: `--offline` (= `--system offline`)", "offline---offline----system-offline"),
    ("Scoring saved outputs: `rag-eval score`", "scoring-saved-outputs-rag-eval-score"),
    ("The path of one case, from the cases file to its row", "the-path-of-one-case-from-the-cases-file-to-its-row"),
])
def test_slug_follows_github(heading, anchor):
    assert slug(heading) == anchor


_PATH = re.compile(r"`((?:pdfrag|chatbot|harness|tests|examples|bench|sample_docs|docs)/[\w./-]*)`")
_NAME = re.compile(r"`((?:pdfrag|chatbot|harness)(?:\.\w+)+)`")


def missing_paths(text: str) -> list[str]:
    out = []
    for found in _PATH.findall(text):
        path = REPO / found.rstrip("/")
        if not path.exists():
            out.append(found)
    return out


def missing_names(text: str) -> list[str]:
    """`harness.x.y` names that neither import as a module nor resolve as an attribute of one."""
    out = []
    for name in _NAME.findall(text):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                out.append(name)
            break
        else:
            out.append(name)
    return out


def test_every_path_and_name_the_docs_give_exists():
    problems = {str(p.relative_to(REPO)): missing_paths(p.read_text(encoding="utf-8")) +
                missing_names(p.read_text(encoding="utf-8")) for p in doc_files()}
    assert {k: v for k, v in problems.items() if v} == {}


def test_stale_paths_and_names_are_found():
    text = ("`harness/report.py` `harness/report/html.py` `docs/metrics.md` `docs/nothing.md` "
            "`harness.evaluate.run_evaluation` `harness.evaluate.no_such_function` `harness.nowhere.f` `pdfrag.text`")
    assert missing_paths(text) == ["harness/report.py", "docs/nothing.md"]
    assert missing_names(text) == ["harness.evaluate.no_such_function", "harness.nowhere.f"]


def test_docs_pages_named_in_the_code_exist():
    """Help texts and error messages send readers to docs pages; those pages exist."""
    named = {m for p in [*REPO.glob("pdfrag/**/*.py"), *REPO.glob("chatbot/**/*.py"), *REPO.glob("harness/**/*.py")]
             for m in re.findall(r"docs/([\w-]+\.md)", p.read_text(encoding="utf-8"))}
    assert {n for n in named if not (DOCS / n).exists()} == set()


# -- the front door ----------------------------------------------------------------------------------------------
def test_readme_is_a_front_door():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert sum(1 for line in text.splitlines() if line.strip()) <= 200
    first = fenced_blocks(text)[0]
    assert first.line == 3 and first.code.splitlines() == [  # .ci/run installs and tests exactly so
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python evaluate_rag.py",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && python -m pytest"]
    with open(REPO / "pyproject.toml", "rb") as fh:
        python = tomllib.load(fh)["project"]["requires-python"].removeprefix(">=")
    assert f"Python {python} or newer" in text
    assert "195" in text and "GPU" in text and "CPU" in text and "estimate" in text


def test_docs_holds_every_page_and_the_index_links_them():
    assert [p for p in PAGES if not (DOCS / p).exists()] == []
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    assert [p for p in PAGES[1:] if f"]({p})" not in index] == []
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted(PAGES), "a page of docs/ missing from PAGES"


def test_the_tests_page_names_every_test_file():
    page = (REPO / "tests" / "README.md").read_text(encoding="utf-8")
    files = sorted(str(p.relative_to(REPO / "tests")) for p in (REPO / "tests").rglob("test_*.py"))
    assert [f for f in files if f"`{f}`" not in page and f"`{f.rpartition('/')[2]}`" not in page] == []


# -- docs/backends.md: a llama.cpp you already have --------------------------------------------------------------
def _llama_cpp_block() -> list[list[str]]:
    """The commands of the first shell block under "A llama.cpp you already have", continuation lines joined."""
    import shlex
    text = (DOCS / "backends.md").read_text(encoding="utf-8")
    section = text.split("## A llama.cpp you already have", 1)[1]
    block = next(b for b in fenced_blocks(section) if b.info.split()[0] in SHELLS)
    return [shlex.split(line) for line in block.code.replace("\\\n", " ").splitlines() if line.strip()]


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_documented_llama_cpp_lines_run_against_llama_cpps_dialect(tmp_path, capsys):
    """The evaluate_rag.py line of backends.md, against two test servers speaking llama.cpp's dialect as the two
    documented `llama-server` lines start it: the chat server's -c shared by -np slots, the embedding server
    refusing inputs over its -ub. It runs (the bundled handbook's cases for `my_pdfs`, two of them); the same line
    against an embedding server with a shorter -ub stops naming -ub (issue #44 items 2 and 3)."""
    from harness.cli import main
    from tests.conftest import HANDBOOK, sample_cases
    from tests.fake_ollama import ModelSpec
    chat_line, embed_line, evaluate = _llama_cpp_block()
    assert chat_line[0] == embed_line[0] == "llama-server" and evaluate[:2] == ["python", "evaluate_rag.py"]
    assert {"--jinja", "-c", "-np", "--alias"} <= set(chat_line)
    assert {"--embeddings", "--pooling", "-b", "-ub", "--alias"} <= set(embed_line)
    assert _flag(embed_line, "-b") == _flag(embed_line, "-ub") and _flag(embed_line, "--pooling") == "mean"
    with FakeOllama(slots=int(_flag(chat_line, "-np"))) as chat, FakeOllama() as embed:
        chat.models = {_flag(chat_line, "--alias"): ModelSpec(["completion"], "llama",
                                                              context_length=int(_flag(chat_line, "-c")))}
        embed.models = {_flag(embed_line, "--alias"): ModelSpec(["embedding"], "gemma3", embedding_length=640,
                                                                context_length=int(_flag(embed_line, "-c")))}
        chat.openai.kind = embed.openai.kind = "llama.cpp"
        urls = {f"http://127.0.0.1:{_flag(chat_line, '--port')}/v1": chat.url + "/v1",
                f"http://127.0.0.1:{_flag(embed_line, '--port')}/v1": embed.url + "/v1"}
        args = [urls.get(a, a) for a in evaluate[2:]]
        args[args.index("--docs") + 1], args[args.index("--cases") + 1] = str(HANDBOOK), sample_cases(tmp_path)
        args += ["--limit", "2", "--out", str(tmp_path / "results")]
        embed.openai.ubatch = int(_flag(embed_line, "-ub"))
        assert main(["run", *args]) == 0
        capsys.readouterr()
        embed.openai.ubatch = 50  # a physical batch shorter than the handbook's pages (a fresh cache: embedded again)
        assert main(["run", *args, "--cache-dir", str(tmp_path / "other-cache")]) == 1
        assert "-b and -ub at least" in capsys.readouterr().err
