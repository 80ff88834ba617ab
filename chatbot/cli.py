"""`rag-chat`: build an index, list source ids, and ask questions about PDFs through a model server (Ollama, or
any OpenAI-compatible server with `--backend openai`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pdfrag._version import __version__
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.errors import InputError
from pdfrag.model_server import BACKENDS, ClientSettings
from pdfrag.page_cache import PageCache
from pdfrag.pdfs import duplicate_warnings, read_folder
from pdfrag.terminal import ProgressBar, SuggestingParser, run_cli, say

from .bot import Chatbot, open_chatbot
from .settings import BotSettings

DEFAULT_INDEX_DIR = ".rag-index"


def _adder(group: argparse._ArgumentGroup, fill: bool):
    """`add(flag, default, help, **kw)`: the help shows the default from the code; with `fill` False the parsed
    default is None, so a caller (rag-eval run) can tell a flag that was given from one a config file fills."""
    def add(flag: str, default: object, help: str, **kw: object) -> None:
        shown = "" if default is None else f" (default {default})"
        group.add_argument(flag, default=default if fill else None, help=help + shown, **kw)  # type: ignore[arg-type]
    return add


def add_server_args(parser: argparse.ArgumentParser, *, fill: bool = True, many_hosts: bool = False) -> None:
    """Flags for the model server and models; shared with `rag-eval run`. With `many_hosts`, `--host` may be
    given once per server (a list, None when not given)."""
    client, bot = ClientSettings(), BotSettings()
    add = _adder(parser.add_argument_group("server and models"), fill)
    where = ("server address: Ollama's (default: $OLLAMA_HOST, else http://127.0.0.1:11434), or with --backend "
             "openai the base URL ending in /v1 (default: $OPENAI_BASE_URL, else http://127.0.0.1:8000/v1)")
    if many_hosts:
        add("--host", None, f"{where}; give it once per server to spread cases over several", action="append")
    else:
        add("--host", None, where)
    add("--backend", client.backend, "the API the server speaks: ollama (native) or openai (vLLM, llama.cpp, "
                                     "SGLang, LM Studio, LiteLLM, Ollama /v1)", choices=list(BACKENDS))
    add("--embed-host", None, "a separate server for embeddings (vLLM and llama.cpp serve one model per server; "
                              "default: the chat server)")
    add("--embed-backend", None, "the API of --embed-host (default: --backend)", choices=list(BACKENDS))
    add("--api-key-env", None, "name of the environment variable holding the API key (openai backend; default: "
                               "OPENAI_API_KEY when set); the key never appears in argv, manifests or logs")
    add("--timeout", client.timeout_s, "seconds per HTTP call, from connect to the last byte of the reply",
        type=float)
    add("--max-body-bytes", client.max_body_bytes, "most decoded bytes of one reply from the model server (or an HTTP "
                                                   "system); past it the reply is refused and no more of it is read",
        type=int)
    add("--retries", client.retries, "retries on 503 and dropped connections", type=int)
    add("--backoff", client.backoff_s, "seconds before the first retry, doubling after", type=float)
    add("--chat-model", bot.chat_model, "the model that answers")
    add("--embed-model", bot.embed_model, "the embedding model")
    add("--doc-prefix", None, "text put before each chunk when embedding (default: the model's own)")
    add("--query-prefix", None, "text put before each question when embedding (default: the model's own)")
    add("--batch-size", bot.batch_size, "texts per embedding request", type=int)
    add("--cache-dir", None, "cache folder: embeddings and extracted page text (default: $PDF_RAG_EVAL_CACHE or "
                         "~/.cache/pdf-rag-eval)")


def add_chunk_args(parser: argparse.ArgumentParser, *, fill: bool = True) -> None:
    bot, add = BotSettings(), _adder(parser.add_argument_group("chunking"), fill)
    add("--chunk-size", bot.chunk_size, "characters per chunk", type=int)
    add("--chunk-overlap", bot.chunk_overlap, "characters repeated between chunks", type=int)


def add_answer_args(parser: argparse.ArgumentParser, *, fill: bool = True) -> None:
    d = BotSettings()
    add = _adder(parser.add_argument_group("answering"), fill)
    add("--top-k", d.top_k, "passages retrieved and given to the model", type=int)
    add("--retriever", d.retriever, "dense (nomic), bm25 (bm25s) or hybrid (reciprocal-rank fusion of both)",
        choices=["dense", "bm25", "hybrid"])
    add("--prompt", None, "prompt template file with $question and $passages (default: the bundled one)")
    add("--num-ctx", d.num_ctx, "model context in tokens", type=int)
    add("--num-predict", d.num_predict, "most tokens the model may write per phase, thinking included (default 4096; "
                                        "on an OpenAI-compatible server a quarter of its per-slot window, an eighth "
                                        "for a thinking model, at most 4096)", type=int)
    add("--seed", d.seed, "sampling seed", type=int)
    add("--temperature", d.temperature, "sampling temperature", type=float)
    add("--think", "auto", "ask the model to think (auto: when it reports the capability)",
        choices=["auto", "on", "off"])
    add("--min-quote-words", d.min_quote_words, "shortest valid quote, in words", type=int)
    add("--max-reply-chars", d.max_reply_chars, "longest model reply kept (a longer one is malformed_output); for "
                                                "another system, the longest answer and the longest passage (a "
                                                "longer one is that case's error row)", type=int)


def client_settings(args: argparse.Namespace) -> ClientSettings:
    return ClientSettings(host=args.host, timeout_s=args.timeout, retries=args.retries, backoff_s=args.backoff,
                          backend=args.backend, embed_host=args.embed_host, embed_backend=args.embed_backend,
                          api_key_env=args.api_key_env, max_body_bytes=args.max_body_bytes)


def chunk_settings(args: argparse.Namespace) -> ChunkSettings:
    return ChunkSettings(args.chunk_size, args.chunk_overlap)


def _cmd_pages(args: argparse.Namespace) -> int:
    """List the good files' pages, then report the bad files (exit 2), so one pass shows everything."""
    cache = PageCache.at()
    folder = read_folder(args.docs, cache=cache)
    for warning in duplicate_warnings(folder.documents) + ((cache.problem,) if cache.problem else ()):
        say(f"warning: {warning}", file=sys.stderr)
    for doc in folder.documents:
        chunks = chunk_pages(list(doc.pages), chunk_settings(args))
        for page in doc.pages:
            if page.page in doc.empty_pages:
                say(f"{page.source_id}\t(no extractable text: probably a scanned page; OCR it first)")
                continue
            mine = [c for c in chunks if c.page == page.page]
            say(f"{page.source_id}\t{_first_words(mine[0].text)}")
            if len(mine) > 1:
                for c in mine:
                    say(f"  {c.source_id}\t{_first_words(c.text)}")
    if folder.problems:
        raise folder.error()
    return 0


def _first_words(text: str, n: int = 12) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def _open(args: argparse.Namespace, *, docs: str | None, index_dir: str | None) -> Chatbot:
    settings = BotSettings.of(args)
    with ProgressBar("embedding chunks", quiet=args.quiet) as bar:
        bot = open_chatbot(docs=docs, index_dir=index_dir, client_settings=client_settings(args),
                           chunking=settings.chunking(), embedding=settings.embedding(),
                           settings=settings.answering(), cache_dir=args.cache_dir, progress=bar, status=_status)
    for warning in bot.warnings + (_ignored_flags(args, bot.index.manifest) if index_dir else ()):
        say(f"warning: {warning}", file=sys.stderr)
    for doc in bot.documents:
        for number in doc.empty_pages:
            say(f"warning: {doc.doc_id} page {number} has no extractable text (probably scanned); "
                  "it is not searchable", file=sys.stderr)
    return bot


def _status(message: str) -> None:
    say(message, file=sys.stderr, flush=True)


def _ignored_flags(args: argparse.Namespace, manifest: dict) -> tuple[str, ...]:
    """Flags given with --index that the saved index overrides: its embedding and chunks are fixed."""
    saved = {"embed_model": manifest["embedding"]["model"], "doc_prefix": manifest["embedding"]["doc_prefix"],
             "query_prefix": manifest["embedding"]["query_prefix"],
             "chunk_size": manifest["chunking"]["size_chars"], "chunk_overlap": manifest["chunking"]["overlap_chars"]}
    defaults = build_parser().parse_args(["ask"])
    return tuple(f"--{name.replace('_', '-')} {getattr(args, name)!r} is ignored: the index was built with "
                 f"{value!r}; rebuild it with `rag-chat index` to change it"
                 for name, value in saved.items()
                 if getattr(args, name) != getattr(defaults, name) and getattr(args, name) != value)


def _cmd_index(args: argparse.Namespace) -> int:
    bot = _open(args, docs=args.docs, index_dir=None)
    out = bot.index.save(args.out)
    counts = bot.index.manifest["counts"]
    say(f"indexed {counts['documents']} documents, {counts['pages']} pages, {counts['chunks']} chunks "
          f"({counts['embedded']} embedded, {counts['from_cache']} from cache) -> {out}")
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    if args.docs is None and args.index is None:
        args.index = DEFAULT_INDEX_DIR if Path(DEFAULT_INDEX_DIR).is_dir() else None
        if args.index is None:
            raise InputError("give --docs DOCS (build a fresh index) or --index DIR (a saved one)")
    bot = _open(args, docs=args.docs, index_dir=args.index)
    if args.question:
        return _show(bot.ask(args.question), as_json=args.json)
    say("Ask a question about the documents (empty line or Ctrl-D to quit).", file=sys.stderr)
    while True:
        try:
            question = input("? ").strip()
        except EOFError:
            return 0
        if not question:
            return 0
        _show(bot.ask(question), as_json=args.json)


def _show(result, *, as_json: bool) -> int:
    if as_json:
        say(json.dumps(result.to_dict(), ensure_ascii=False))
        return 0
    say(result.text)
    for c in result.citations:
        mark = "ok" if c.valid else f"INVALID: {c.reason}"
        doc, _, where = c.source_id.partition("#p")
        say(f'  [{c.source_id}] {doc}, page {where.split(".")[0] or "?"}: "{c.quote}"  ({mark})')
    say(f"status: {result.status}" + (f" ({'; '.join(result.reasons)})" if result.reasons else ""))
    return 0


def _add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no progress while embedding: neither the bar on a terminal nor the log lines elsewhere")


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(prog="rag-chat", description=__doc__)
    parser.add_argument("--version", action="version", version=f"pdf-rag-eval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="build an index of a PDF file or folder")
    p.add_argument("docs", help="a PDF file or a folder of PDFs (searched recursively)")
    p.add_argument("--out", default=DEFAULT_INDEX_DIR, help=f"index directory (default {DEFAULT_INDEX_DIR})")
    add_server_args(p)
    add_chunk_args(p)
    add_answer_args(p)
    _add_quiet(p)
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("pages", help="list every source id with its first words (for writing labels)")
    p.add_argument("docs", help="a PDF file or a folder of PDFs (searched recursively)")
    add_chunk_args(p)
    p.set_defaults(func=_cmd_pages)

    p = sub.add_parser("ask", help="answer a question (interactive when none is given)")
    p.add_argument("question", nargs="?", help="the question (leave it out to ask several, one a line)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--docs", help="build a fresh index from these PDFs")
    src.add_argument("--index", help=f"use a saved index (default {DEFAULT_INDEX_DIR} when present)")
    p.add_argument("--json", action="store_true", help="print the whole answer record as JSON")
    add_server_args(p)
    add_chunk_args(p)
    add_answer_args(p)
    _add_quiet(p)
    p.set_defaults(func=_cmd_ask)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser(), argv)

if __name__ == "__main__":
    sys.exit(main())
