"""`rag-eval judge RUN`: a model judges every claim of the run's answers, as one more reviewer.

  rag-eval judge results/B                  one chat call per answer; verdicts into the reviews file
  rag-eval judge results/B --dry-run        how many calls it would make (the rest come from the cache)
  rag-eval review results/B --calibrate 40  then review a random sample of the judged claims yourself
  rag-eval review results/B --agreement     and read the judge's agreement with people

The verdicts are stored under the reviewer `judge:<model>@<digest>` with the prompt's SHA-256; the run's rows and
summary then carry claims_supported_judged and claim_support_judged (claims_supported counts people only).
Nothing a judge says counts in `passed` unless you ask (--judged-passed) and it is measured against people.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pdfrag.model_server import BACKENDS
from pdfrag.terminal import ProgressBar, say

from ..errors import command
from ..judge.run import JudgeResult, JudgeSettings, judge_run
from ..judged.standing import judge_agreement
from ..records import MetricSummary
from ..runs import read_rows
from .common import default_reviews, judged_passed_text
from .flags import add_quiet


def register(sub: argparse._SubParsersAction) -> None:
    d = JudgeSettings()
    p = sub.add_parser("judge", help="a model judges every claim of a run's answers, stored as a reviewer",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run directory")
    p.add_argument("--model", help="the judge model (default: the run's chat model, else qwen3:4b)")
    p.add_argument("--host", help="the judge's server (default: the run's first server when the judge speaks the "
                                  "run's API, else $OLLAMA_HOST, else http://127.0.0.1:11434; with --backend openai: "
                                  "$OPENAI_BASE_URL)")
    p.add_argument("--backend", choices=list(BACKENDS), help="the API the server speaks: ollama or openai (vLLM, "
                                                             "llama.cpp, ...); default: the run's, else ollama")
    p.add_argument("--api-key-env", help="name of the environment variable holding the API key (openai backend)")
    p.add_argument("--prompt", help="judge prompt template with $question, $answer, $claims, $passages "
                                    "(default harness/prompts/judge.txt)")
    p.add_argument("--reviews", metavar="FILE", help="reviews file (default: <cases stem>.reviews.jsonl beside the "
                                                     "run's cases file)")
    p.add_argument("--dry-run", action="store_true", help="say how many chat calls it would make, and stop")
    p.add_argument("--timeout", type=float, default=d.timeout, help=f"seconds per HTTP call (default {d.timeout:g})")
    p.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes,
                   help=f"most decoded bytes of one reply from the judge's server; past it the reply is refused and "
                        f"no more of it is read (default {d.max_body_bytes})")
    p.add_argument("--retries", type=int, default=d.retries, help=f"retries on 503 and dropped connections "
                                                                  f"(default {d.retries})")
    p.add_argument("--backoff", type=float, default=d.backoff, help=f"seconds before the first retry "
                                                                    f"(default {d.backoff:g})")
    p.add_argument("--num-ctx", type=int, default=d.num_ctx, help=f"model context in tokens (default {d.num_ctx})")
    p.add_argument("--num-predict", type=int, default=d.num_predict,
                   help="most tokens the model may write per phase (default 4096; on an OpenAI-compatible server a "
                        "quarter of its per-slot window, an eighth for a thinking model, at most 4096)")
    p.add_argument("--seed", type=int, default=d.seed, help=f"sampling seed (default {d.seed})")
    p.add_argument("--think", choices=["auto", "on", "off"], default=d.think, help="default auto")
    p.add_argument("--min-quote-words", type=int, help="shortest valid quote (default: the run's)")
    p.add_argument("--cache-dir", help="cache root (default: $PDF_RAG_EVAL_CACHE or ~/.cache/pdf-rag-eval)")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run)
    reviews = Path(args.reviews) if args.reviews else default_reviews(run_dir)
    settings = JudgeSettings(model=args.model, host=args.host, backend=args.backend, api_key_env=args.api_key_env,
                             timeout=args.timeout, retries=args.retries, max_body_bytes=args.max_body_bytes,
                             backoff=args.backoff, num_ctx=args.num_ctx, num_predict=args.num_predict, seed=args.seed,
                             think=args.think, prompt=args.prompt, cache_dir=args.cache_dir,
                             min_quote_words=args.min_quote_words)
    with ProgressBar("judging", quiet=bool(args.quiet)) as bar:
        result = judge_run(run_dir, reviews, settings, dry_run=args.dry_run,
                           progress=lambda done, total, cached: bar(done, total, reused=cached))
    if result.calls_needed is not None:
        say(f"{result.judge}: {result.answers} answers with {result.claims} claims; {result.calls_needed} chat "
              f"call(s) needed, {result.from_cache} answer(s) already in the cache")
        return 0
    say(_report(run_dir, reviews, result))
    for e in result.errors:
        say(f"warning: case {e.case_id}: not judged: {e.error}", file=sys.stderr)
    if result.errors:
        say(f"warning: {len(result.errors)} answer(s) not judged (see {run_dir}/judge.json); run the same command "
              "again to retry them, judged answers come from the cache", file=sys.stderr)
    return 1 if result.errors and len(result.errors) == result.answers else 0


def _mean(metric: MetricSummary | None) -> str:
    return "n/a" if metric is None or metric.mean is None else f"{metric.mean:.3f}"


def _report(run_dir: Path, reviews: Path, result: JudgeResult) -> str:
    summary = result.summary
    judged = summary.metrics.get("claims_supported_judged") if summary else None
    human = summary.metrics.get("claims_supported") if summary else None
    agreement = judge_agreement(read_rows(run_dir))
    switched = judged_passed_text(summary) if summary else None
    return "\n".join([*([switched] if switched else []),
        f"{result.judge} (prompt sha256 {result.prompt_sha256[:12]}): {result.answers} answers, {result.claims} "
        f"claims; {result.chat_calls} chat call(s), {result.from_cache} from the cache, {len(result.errors)} "
        f"error(s); verdicts in {reviews}",
        f"claims_supported (people) {_mean(human)}; claims_supported_judged {_mean(judged)}",
        agreement.headline() if agreement else "no claims judged",
        f"next: {command('review', run_dir, '--calibrate', '40')}, then {command('review', run_dir, '--agreement')}"])
