"""`rag-chat`: build an index, list source ids, and ask questions about PDFs through a local Ollama."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .answer import AnswerSettings
from .bot import Chatbot, open_chatbot
from .chunking import ChunkSettings, chunk_pages
from .errors import InputError
from .index import EmbedSettings
from .ollama_client import DEFAULT_CHAT_MODEL, DEFAULT_EMBED_MODEL, ClientSettings
from .pdfs import duplicate_warnings, read_folder
from .terminal import ProgressBar, run_cli

DEFAULT_INDEX_DIR = ".rag-index"


def add_server_args(parser: argparse.ArgumentParser) -> None:
    """Flags for the model server and models; shared with `rag-eval run`."""
    g = parser.add_argument_group("server and models")
    g.add_argument("--host", help="Ollama address (default: $OLLAMA_HOST, else http://127.0.0.1:11434)")
    g.add_argument("--timeout", type=float, default=300.0, help="seconds per HTTP call (default 300)")
    g.add_argument("--retries", type=int, default=3, help="retries on 503 and dropped connections (default 3)")
    g.add_argument("--chat-model", default=DEFAULT_CHAT_MODEL, help=f"default {DEFAULT_CHAT_MODEL}")
    g.add_argument("--embed-model", default=DEFAULT_EMBED_MODEL, help=f"default {DEFAULT_EMBED_MODEL}")
    g.add_argument("--doc-prefix", help="text put before each chunk when embedding (default: the model's own)")
    g.add_argument("--query-prefix", help="text put before each question when embedding (default: the model's own)")
    g.add_argument("--batch-size", type=int, default=32, help="texts per embedding request (default 32)")
    g.add_argument("--cache-dir", help="embedding cache (default: $PDF_RAG_EVAL_CACHE or ~/.cache/pdf-rag-eval)")


def add_chunk_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("chunking")
    g.add_argument("--chunk-size", type=int, default=ChunkSettings.size_chars, help="characters (default 2000)")
    g.add_argument("--chunk-overlap", type=int, default=ChunkSettings.overlap_chars, help="characters (default 200)")


def add_answer_args(parser: argparse.ArgumentParser) -> None:
    d = AnswerSettings()
    g = parser.add_argument_group("answering")
    g.add_argument("--top-k", type=int, default=d.top_k, help=f"passages given to the model (default {d.top_k})")
    g.add_argument("--prompt", help="prompt template file with $question and $passages (default: bundled)")
    g.add_argument("--num-ctx", type=int, default=d.num_ctx, help=f"model context in tokens (default {d.num_ctx})")
    g.add_argument("--num-predict", type=int, default=d.num_predict,
                   help=f"most tokens the model may write, thinking included (default {d.num_predict})")
    g.add_argument("--seed", type=int, default=d.seed)
    g.add_argument("--temperature", type=float, default=d.temperature)
    g.add_argument("--think", choices=["auto", "on", "off"], default="auto",
                   help="ask the model to think (auto: when it reports the capability)")
    g.add_argument("--min-quote-words", type=int, default=d.min_quote_words)
    g.add_argument("--max-reply-chars", type=int, default=d.max_reply_chars,
                   help=f"longest reply kept; a longer one is malformed_output (default {d.max_reply_chars})")


def client_settings(args: argparse.Namespace) -> ClientSettings:
    return ClientSettings(host=args.host, timeout_s=args.timeout, retries=args.retries)


def embed_settings(args: argparse.Namespace) -> EmbedSettings:
    return EmbedSettings(args.embed_model, args.doc_prefix, args.query_prefix, args.batch_size)


def chunk_settings(args: argparse.Namespace) -> ChunkSettings:
    return ChunkSettings(args.chunk_size, args.chunk_overlap)


def answer_settings(args: argparse.Namespace) -> AnswerSettings:
    think = {"auto": None, "on": True, "off": False}[args.think]
    return AnswerSettings(top_k=args.top_k, chat_model=args.chat_model, prompt_path=args.prompt,
                          temperature=args.temperature, seed=args.seed, num_ctx=args.num_ctx,
                          num_predict=args.num_predict, think=think, min_quote_words=args.min_quote_words,
                          max_reply_chars=args.max_reply_chars)


def _cmd_pages(args: argparse.Namespace) -> int:
    """List the good files' pages, then report the bad files (exit 2), so one pass shows everything."""
    folder = read_folder(args.docs)
    for warning in duplicate_warnings(folder.documents):
        print(f"warning: {warning}", file=sys.stderr)
    for doc in folder.documents:
        chunks = chunk_pages(list(doc.pages), chunk_settings(args))
        for page in doc.pages:
            if page.page in doc.empty_pages:
                print(f"{page.source_id}\t(no extractable text: probably a scanned page; OCR it first)")
                continue
            mine = [c for c in chunks if c.page == page.page]
            print(f"{page.source_id}\t{_first_words(mine[0].text)}")
            if len(mine) > 1:
                for c in mine:
                    print(f"  {c.source_id}\t{_first_words(c.text)}")
    if folder.problems:
        raise folder.error()
    return 0


def _first_words(text: str, n: int = 12) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def _open(args: argparse.Namespace, *, docs: str | None, index_dir: str | None) -> Chatbot:
    bot = open_chatbot(docs=docs, index_dir=index_dir, client_settings=client_settings(args),
                       chunking=chunk_settings(args), embedding=embed_settings(args),
                       settings=answer_settings(args), cache_dir=args.cache_dir,
                       progress=ProgressBar("embedding chunks"), status=_status)
    for warning in bot.warnings + (_ignored_flags(args, bot.index.manifest) if index_dir else ()):
        print(f"warning: {warning}", file=sys.stderr)
    for doc in bot.documents:
        for number in doc.empty_pages:
            print(f"warning: {doc.doc_id} page {number} has no extractable text (probably scanned); "
                  "it is not searchable", file=sys.stderr)
    return bot


def _status(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
    print(f"indexed {counts['documents']} documents, {counts['pages']} pages, {counts['chunks']} chunks "
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
    print("Ask a question about the documents (empty line or Ctrl-D to quit).", file=sys.stderr)
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
        print(json.dumps(result.to_dict(), ensure_ascii=False))
        return 0
    print(result.text)
    for c in result.citations:
        mark = "ok" if c.valid else f"INVALID: {c.reason}"
        doc, _, where = c.source_id.partition("#p")
        print(f'  [{c.source_id}] {doc}, page {where.split(".")[0] or "?"}: "{c.quote}"  ({mark})')
    print(f"status: {result.status}" + (f" ({'; '.join(result.reasons)})" if result.reasons else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-chat", description=__doc__)
    parser.add_argument("--version", action="version", version=f"pdf-rag-eval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="build an index of a PDF file or folder")
    p.add_argument("docs", help="a PDF file or a folder of PDFs (searched recursively)")
    p.add_argument("--out", default=DEFAULT_INDEX_DIR, help=f"index directory (default {DEFAULT_INDEX_DIR})")
    add_server_args(p), add_chunk_args(p), add_answer_args(p)
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("pages", help="list every source id with its first words (for writing labels)")
    p.add_argument("docs")
    add_chunk_args(p)
    p.set_defaults(func=_cmd_pages)

    p = sub.add_parser("ask", help="answer a question (interactive when none is given)")
    p.add_argument("question", nargs="?")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--docs", help="build a fresh index from these PDFs")
    src.add_argument("--index", help=f"use a saved index (default {DEFAULT_INDEX_DIR} when present)")
    p.add_argument("--json", action="store_true", help="print the whole answer record as JSON")
    add_server_args(p), add_chunk_args(p), add_answer_args(p)
    p.set_defaults(func=_cmd_ask)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser(), argv)

if __name__ == "__main__":
    sys.exit(main())
