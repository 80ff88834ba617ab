"""`rag-eval draft`: select pages, ask the model for drafts, verify them, and keep earlier human decisions.

Calls: one /api/chat per selected page (none when cached), one per parametric check of a draft that passed
verification (cached the same way), one per unanswerable draft; embeddings for the index and the questions go
through the embedding cache. A page whose call fails becomes an `error` draft; the command goes on.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from chatbot.index import EmbeddingCache, EmbedSettings, Index, build_index, cache_root
from pdfrag.asking import Asker, Failed, ParsedReplies, PromptTemplate, sha256
from pdfrag.backends import connect
from pdfrag.errors import ModelServerError
from pdfrag.hosts import HostPool
from pdfrag.model_server import ModelServer, ServerInfo, preflight, server_window
from pdfrag.page_cache import PageCache
from pdfrag.pdfs import Document, Page, read_documents
from pdfrag.text import clip, fold, normalize

from ..errors import InputError
from ..metrics.matching import fact_found
from ..records import NOTE_CHARS, QUESTION_CHARS, QUOTE_CHARS, TERM_CHARS
from .collection import Collection, evidence_rank
from .prompting import PARAMETRIC_SCHEMA, UNANSWERABLE_SCHEMA, drafts_schema
from .records import Draft, Provenance, Reason, Verification, draft_id, read_drafts
from .select import PageSelection, nothing_to_draft, select_pages
from .settings import DraftSettings
from .unanswerable import check_unanswerable
from .verify import check_draft, strip_wrapping

Progress = Callable[[str, int, int, int], None]  # (stage, done, total, how many of the done came from the cache)


@dataclass(frozen=True)
class DraftRun:
    """What one `rag-eval draft` produced: the drafts (in page order), the selection and the call counts."""

    drafts: tuple[Draft, ...]
    selection: PageSelection
    chat_calls: int
    pages_from_cache: int
    server: dict
    settings: DraftSettings


@dataclass
class _Context:
    settings: DraftSettings
    documents: list[Document]
    collection: Collection
    asker: Asker
    client: ModelServer
    server: ServerInfo
    cache_root: Path
    pool: HostPool  # the servers the pages are spread over, each with its own asker
    askers: dict[str, Asker]
    embedder: ModelServer  # the server that embeds (the first chat server unless --embed-host names another)
    embed_server: ServerInfo
    index: Index | None = None  # the dense index, built when the first round trip needs it


def run_drafting(settings: DraftSettings, *, progress: Progress | None = None) -> DraftRun:
    """Draft, verify and return every draft; decisions already in `settings.out` are kept for unchanged drafts.
    The folder of `settings.out` is made first, before any model call, so that the drafts have a place to go."""
    Path(settings.out).parent.mkdir(parents=True, exist_ok=True)
    documents = read_documents(settings.docs, cache=PageCache.at(settings.cache_dir))
    previous = read_drafts(settings.out) if Path(settings.out).exists() else []
    selection = select_pages(documents, seed=settings.seed, min_words=settings.min_page_words,
                             max_pages=settings.max_pages, page_ids=settings.pages or None)
    if not selection.pages:
        raise InputError(nothing_to_draft(selection, settings.docs, settings.min_page_words))
    settings = replace(settings, unanswerable=settings.unanswerable_for(len(selection.pages)))  # as recorded
    ctx = _open(settings, documents)
    drafts: list[Draft] = []
    cached = 0
    if progress:
        progress("pages", 0, len(selection.pages), 0)
    served = ctx.pool.imap(lambda client, page: _draft_page(ctx, page, ctx.askers[client.host]), selection.pages)
    for n, one in enumerate(served, start=1):
        page_drafts, from_cache = one.value
        drafts.extend(page_drafts)
        cached += from_cache
        if progress:
            progress("pages", n, len(selection.pages), cached)
    drafts = _round_trip_and_dedupe(ctx, drafts)
    drafts = _parametric(ctx, drafts, progress)
    drafts += _unanswerable(ctx, selection.pages, progress)
    drafts = merge_previous(drafts, previous, selection, documents)
    calls: int = sum(a.chat_calls for a in ctx.askers.values())  # ctx.asker is the first server's
    server = ctx.server.to_dict()
    if ctx.embed_server is not ctx.server:  # --embed-host: the embedding server's identity beside the chat one's
        server["embed_server"] = ctx.embed_server.to_dict()
    return DraftRun(tuple(drafts), selection, calls, cached, server, settings)


def merge_previous(drafts: list[Draft], previous: Sequence[Draft], selection: PageSelection,
                   documents: Sequence[Document]) -> list[Draft]:
    """Keep what a human did in an earlier run of the same output file.

    A fresh draft whose id matches an earlier one takes its reviewers' decisions and resolution; if a human
    edited it, the edited draft is kept whole. Earlier drafts of pages not drafted this time (`--pages`,
    `--max-pages`) are kept when their page still has the same text; drafts of changed or removed pages are
    dropped, since their checks no longer hold."""
    earlier = {d.draft_id: d for d in previous}
    merged = []
    for draft in drafts:
        old = earlier.get(draft.draft_id)
        if old is None or not (old.reviews or old.resolution):
            merged.append(draft)
        else:
            merged.append(old if old.original is not None else draft.with_reviews_of(old))
    drafted = {p.source_id for p in selection.pages}
    hashes = {p.source_id: sha256(normalize(p.text)) for d in documents for p in d.pages}
    kept = [d for d in previous if d.source_id not in drafted and d.kind != "error" and d.provenance is not None
            and hashes.get(d.source_id) == d.provenance.page_sha256]
    return kept + merged


def _open(settings: DraftSettings, documents: list[Document]) -> _Context:
    """Preflight every server (a different model build on any is refused before loading anything); the first
    one also does the round trips, the parametric and unanswerable checks; pages are spread over all."""
    servers, client_settings = settings.servers(), settings.client()
    separate = client_settings.separate_embeddings
    chat_embed = None if separate else settings.embed_model  # the embedding model is asked of its own server
    if len(servers) > 1:
        pool = HostPool.connect(servers, settings=client_settings, slots=settings.workers)
        server = pool.preflight(chat_model=settings.chat_model, embed_model=chat_embed).servers[0]
        client = pool.clients[0]
    else:
        client = connect(client_settings)
        server = preflight(client, chat_model=settings.chat_model, embed_model=chat_embed)
        pool = HostPool([client], slots=settings.workers)
    embedder, embed_server = client, server
    if separate:
        embedder = connect(client_settings.for_embeddings())
        embed_server = preflight(embedder, chat_model=None, embed_model=settings.embed_model)
    chat = server.models[settings.chat_model]
    root = cache_root(settings.cache_dir)
    cache = ParsedReplies(root / "draft-replies")
    askers = {c.host: Asker(c, settings.chat(), chat.digest, chat.capabilities, cache,
                            window=server_window(c, chat)) for c in pool.clients}
    return _Context(settings, documents, Collection.of(documents, settings.chunking()), askers[client.host], client,
                    server, root, pool=pool, askers=askers, embedder=embedder, embed_server=embed_server)


def _provenance(ctx: _Context, template: PromptTemplate, text: str, from_cache: bool) -> Provenance:
    return Provenance(ctx.settings.chat_model, ctx.asker.digest, template.sha256, sha256(text), ctx.settings.seed,
                      _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), from_cache)


def _draft_page(ctx: _Context, page: Page, asker: Asker | None = None) -> tuple[list[Draft], bool]:
    """The drafts of one page (or one error draft), and whether the reply came from the cache. `asker` is the
    server's that drafts it (default: the first server's)."""
    template, text = PromptTemplate.bundled("harness", "draft"), normalize(page.text)
    outcome = (asker or ctx.asker).ask(template, drafts_schema(ctx.settings.per_page), per_page=ctx.settings.per_page,
                            page=text)
    provenance = _provenance(ctx, template, text, outcome.from_cache)
    if isinstance(outcome, Failed):
        error = Draft(draft_id("error", page.source_id, "", ""), "error", page.source_id, provenance=provenance,
                      verification=Verification(False, (Reason("draft_error", outcome.error),)), error=outcome.error)
        return [error], False
    drafts: list[Draft] = []
    ids: set[str] = set()
    for item in outcome.reply["drafts"]:
        question, quote, facts = item["question"].strip(), strip_wrapping(item["quote"]), tuple(item["facts"])
        checked = check_draft(question, quote, facts, page.source_id, ctx.collection.view, ctx.settings.limits())
        verification = Verification(not checked.reasons, checked.reasons, checked.tags, round(checked.overlap, 4),
                                    checked.longest_ngram, checked.language)
        # kept bounded in the drafts file: a text over its limit failed the checks above and is stored cut
        question, quote = clip(question, QUESTION_CHARS), clip(quote, QUOTE_CHARS)
        facts = tuple(clip(f, TERM_CHARS) for f in facts)
        ident = _unique(draft_id("answerable", page.source_id, question, quote), ids)
        drafts.append(Draft(ident, "answerable", page.source_id, question, quote, facts, item["type"],
                            checked.evidence, verification, provenance=provenance))
    return drafts, outcome.from_cache


def _unique(ident: str, seen: set[str]) -> str:
    """The model may repeat a draft word for word; the second copy gets a suffix (dedupe rejects it)."""
    n, candidate = 1, ident
    while candidate in seen:
        n += 1
        candidate = f"{ident}-{n}"
    seen.add(candidate)
    return candidate


def _amend(draft: Draft, *reasons: Reason, tags: Sequence[str] = (), notes: Sequence[str] = (), **fields) -> Draft:
    """The draft with reasons (it then fails), tags, notes or measurement fields added to its verification."""
    v = draft.verification
    return replace(draft, verification=replace(
        v, passed=v.passed and not reasons, reasons=v.reasons + tuple(reasons),
        tags=v.tags + tuple(t for t in tags if t not in v.tags), notes=v.notes + tuple(notes), **fields))


def _round_trip_and_dedupe(ctx: _Context, drafts: list[Draft]) -> list[Draft]:
    """Ranks of the evidence page under the dense retriever and BM25 (recorded; misses tagged `hard`), then
    dedupe: one draft per (page, quote), no two equal questions, no two questions with cosine >= the limit."""
    answerable = [i for i, d in enumerate(drafts) if d.kind == "answerable" and d.evidence]
    vectors, error = _question_vectors(ctx, [drafts[i].question for i in answerable])
    out = list(drafts)
    for row, i in enumerate(answerable):
        d = drafts[i]
        bm25 = ctx.collection.bm25_rank(d.question, d.quote, d.evidence)
        ranks = [bm25]
        dense = None
        if vectors is not None and ctx.index is not None:
            ranked = [h.chunk for h in ctx.index.search(vectors[row], len(ctx.index.chunks))]
            dense = evidence_rank(ranked, d.quote, d.evidence)
            ranks.append(dense)
        missed = any(r is None or r > ctx.settings.top_k for r in ranks)
        notes = (f"dense round trip not computed: {error}",) if error else ()
        out[i] = _amend(d, tags=("hard",) if missed else (), notes=notes, dense_rank=dense, bm25_rank=bm25)
    return _dedupe(ctx, out, {i: vectors[row] for row, i in enumerate(answerable)} if vectors is not None else {})


def _question_vectors(ctx: _Context, questions: list[str]) -> tuple[np.ndarray | None, str | None]:
    """Unit vectors of the questions (query prefix), from the embedding cache where possible."""
    if not questions:
        return np.zeros((0, 0), dtype=np.float32), None
    embedding = EmbedSettings(ctx.settings.embed_model)  # the bot's index of the pages, its default prefixes
    digest = ctx.embed_server.models[embedding.model].digest
    cache = EmbeddingCache(ctx.cache_root / "embeddings")
    try:
        ctx.index = build_index(ctx.documents, ctx.embedder, chunking=ctx.settings.chunking(), embedding=embedding,
                                digest=digest, cache=cache)
        prefix = embedding.prefixes[1]
        keys = [EmbeddingCache.key(digest, prefix, q) for q in questions]
        cached = [cache.get(k) for k in keys]
        missing = [j for j, v in enumerate(cached) if v is None]
        fresh: dict[int, np.ndarray] = {}
        if missing:
            fresh = dict(zip(missing, ctx.embedder.embed(embedding.model, [prefix + questions[j] for j in missing])))
            for j, vector in fresh.items():
                cache.put(keys[j], vector)
    except ModelServerError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return np.vstack([fresh[j] if v is None else v for j, v in enumerate(cached)]).astype(np.float32), None


def _dedupe(ctx: _Context, drafts: list[Draft], vectors: dict[int, np.ndarray]) -> list[Draft]:
    """Among drafts that passed so far, in order, a later draft repeating an earlier one is rejected."""
    out = list(drafts)
    quotes: dict[tuple[str, str], str] = {}
    questions: dict[str, str] = {}
    kept: list[tuple[str, np.ndarray]] = []
    for i, draft in enumerate(drafts):
        if draft.kind != "answerable" or not draft.verification.passed:
            continue
        quote_key, question_key = (draft.source_id, fold(draft.quote)), fold(draft.question)
        if quote_key in quotes:
            out[i] = _amend(draft, Reason("duplicate_quote", f"{quotes[quote_key]} already uses this quote on "
                                                            f"{draft.source_id}"))
        elif question_key in questions:
            out[i] = _amend(draft, Reason("duplicate_question", f"the same question as {questions[question_key]}"))
        elif i in vectors and (near := _near(vectors[i], kept, ctx.settings.dedupe_cosine)) is not None:
            out[i] = _amend(draft, Reason("near_duplicate", f"cosine {near[1]:.3f} >= {ctx.settings.dedupe_cosine:g} "
                                                           f"with {near[0]}"))
        else:
            quotes[quote_key] = questions[question_key] = draft.draft_id
            if i in vectors:
                kept.append((draft.draft_id, vectors[i]))
    return out


def _near(vector: np.ndarray, kept: list[tuple[str, np.ndarray]], limit: float) -> tuple[str, float] | None:
    """The first kept question at cosine >= limit (vectors are unit length), with its cosine."""
    for ident, other in kept:
        cosine = float(np.dot(vector, other))
        if cosine >= limit:
            return ident, cosine
    return None


def _parametric(ctx: _Context, drafts: list[Draft], progress: Progress | None) -> list[Draft]:
    """Ask each passing draft's question without the page: if a fact still appears, tag it `parametric`."""
    if not ctx.settings.parametric:
        return drafts
    template, out = PromptTemplate.bundled("harness", "parametric"), list(drafts)
    todo = [i for i, d in enumerate(drafts) if d.kind == "answerable" and d.verification.passed]
    cached = 0
    if progress and todo:  # the start: a log shows the stage began before its first reply
        progress("parametric checks", 0, len(todo), 0)
    for n, i in enumerate(todo, start=1):
        draft = drafts[i]
        outcome = ctx.asker.ask(template, PARAMETRIC_SCHEMA, question=draft.question)
        cached += outcome.from_cache
        if isinstance(outcome, Failed):
            out[i] = _amend(draft, notes=(f"parametric check failed: {outcome.error}",))
        else:
            answer = clip(outcome.reply["answer"], NOTE_CHARS)  # read and kept to its first NOTE_CHARS characters
            known = any(fact_found(answer, [f]) for f in draft.facts)
            out[i] = _amend(draft, tags=("parametric",) if known else (), parametric_answer=answer)
        if progress:
            progress("parametric checks", n, len(todo), cached)
    return out


def _unanswerable(ctx: _Context, pages: Sequence[Page], progress: Progress | None) -> list[Draft]:
    """`--unanswerable N` drafts (by default 1 in 5 of all: DraftSettings.unanswerable_for), from the selected
    pages in turn (one call each)."""
    wanted = ctx.settings.unanswerable or 0
    if not wanted:
        return []
    template = PromptTemplate.bundled("harness", "unanswerable")
    sentences = ctx.collection.sentences
    drafts: list[Draft] = []
    ids: set[str] = set()
    asked: dict[str, str] = {}  # folded question -> id of the first draft asking it
    cached = 0
    if progress:
        progress("unanswerable", 0, wanted, 0)
    for n in range(wanted):
        page = pages[n % len(pages)]
        text = normalize(page.text)
        # The nth visit of a page asks again with a note, so that two drafts from one page differ.
        outcome = ctx.asker.ask(template, UNANSWERABLE_SCHEMA, page=text + _variant(n // len(pages)))
        provenance = _provenance(ctx, template, text, outcome.from_cache)
        cached += outcome.from_cache
        if progress:
            progress("unanswerable", n + 1, wanted, cached)
        if isinstance(outcome, Failed):
            drafts.append(Draft(_unique(draft_id("error", page.source_id, "unanswerable", str(n)), ids), "error",
                                page.source_id, type="unanswerable", provenance=provenance, error=outcome.error,
                                verification=Verification(False, (Reason("draft_error", outcome.error),))))
            continue
        reply = outcome.reply
        reasons, best = check_unanswerable(reply["question"].strip(), reply["original"], reply["changed"],
                                           page.source_id, ctx.collection.view.pages, sentences,
                                           ctx.settings.abstain_below)
        question, original, changed = (clip(reply["question"], QUESTION_CHARS), clip(reply["original"], TERM_CHARS),
                                       clip(reply["changed"], TERM_CHARS))  # bounded as answerable drafts are
        ident = _unique(draft_id("unanswerable", page.source_id, question, ""), ids)
        if (first := asked.setdefault(fold(question), ident)) != ident:
            reasons.append(Reason("duplicate_question", f"the same question as {first}"))
        verification = Verification(not reasons, tuple(reasons), ("unanswerable",), best_bm25=round(best, 4),
                                    notes=(f"changed {original!r} to {changed!r}",))
        drafts.append(Draft(ident, "unanswerable", page.source_id, question.strip(), type="unanswerable",
                            verification=verification, provenance=provenance))
    return drafts


def _variant(n: int) -> str:
    return "" if n == 0 else f"\n[variant {n + 1}: change a different term than before]"
