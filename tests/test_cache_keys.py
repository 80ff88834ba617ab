"""Cache keys are a file format: an answer, draft or judge reply cached by an earlier version must still be found.

Each key below is built through the code path that uses it (the answer path's caching generator, drafting's asker,
the judge's asker), from fixed inputs. The expected values were computed by the code as it stood before the
prompt templates and askers moved into one module (commit e8f7cc8): a move that changes a byte of what goes into
a key fails here. A deliberate change of what is sent (another schema, other defaults) changes the key, as it
must, and then these values are updated in the same commit, saying why.
"""

from __future__ import annotations

from pathlib import Path

from chatbot.answer import ANSWER_SCHEMA, AnswerSettings, answer_schema, answer_template, render_prompt
from chatbot.answer_cache import CachingGenerator
from chatbot.index import Hit
from harness.drafting.prompting import drafts_schema
from harness.judge.asking import judge_asker
from harness.judge.prompting import judge_template, judge_values, verdicts_schema
from pdfrag.asking import Asker, ChatOptions, ParsedReplies, PromptTemplate
from pdfrag.chunking import Chunk
from pdfrag.model_server import ChatReply
from pdfrag.reply_cache import AnswerCache
from tests.support.rowkit import make_row

DIGEST = "sha256:" + "ab" * 32
HITS = [Hit(1, 0.9, Chunk("handbook.pdf#p1", "handbook.pdf", 1, 0, 40, "Employees get 25 days of annual leave.")),
        Hit(2, 0.5, Chunk("handbook.pdf#p2", "handbook.pdf", 2, 0, 30, "Hotels are capped at EUR 150."))]

ANSWER_KEY = "eb5ef6eea60777c775cd0923c372d7c643a7d59d1e1330e2e03a1e3afa9d9844"
ANSWER_KEY_THINKING = "dec260438e3aef6f1c14f356d7d86f9771ed03522953febcb2768d02b06f98e9"
ANSWER_KEY_WITH_IDS = "626eb27aaa41cfed08f5e54f1b674f4cc2a41df9df2cc08fac4fa526d06bd118"
DRAFT_KEY = "9695d829bc94f8e71e11f4e6424884d2fa1820bbe520707ef1bcb76330fe6163"
JUDGE_KEY = "a2bee205388d279d153b7faac82b22b046075cf4dadd372d42d382ecb598fc59"
JUDGE_KEY_OPENAI = "4f7c81a4057183635f11c1b11e8899a8d6f159319b9719ed616f8d4bd190e135"


class _Generator:
    model, digest = "qwen3:4b", DIGEST

    def __init__(self, think: bool | None):
        self.think = think

    def think_value(self, settings: AnswerSettings) -> bool | None:
        return self.think


class _Client:
    """A model server that answers every chat with `content` and records nothing else."""

    host = "http://127.0.0.1:1"

    def __init__(self, content: str, backend: str = "ollama"):
        self.content, self.backend = content, backend

    def chat(self, model, messages, **_):
        return ChatReply(self.content, "", "stop", 10, 5, 1.0, 0.0, 0.5, 0.5)


def test_the_answer_cache_key_of_the_bundled_prompt_is_unchanged(tmp_path):
    """With no passage the format sent is ANSWER_SCHEMA itself, as before, so the key is the one stored before the
    move; with passages the format names their ids (`answer_schema`, issue #28), so the key is another, as it must
    be: a reply to a request without that enum is not a reply to this one."""
    prompt = render_prompt(answer_template(), "How many days of annual leave?", HITS)
    cache = AnswerCache(tmp_path / "answers")
    assert CachingGenerator(_Generator(None), cache).key(prompt, AnswerSettings(), []) == ANSWER_KEY
    thinking = CachingGenerator(_Generator(True), cache, repeat=2)
    assert thinking.key(prompt, AnswerSettings(top_k=6, num_predict=2048), []) == ANSWER_KEY_THINKING
    assert answer_schema([]) == ANSWER_SCHEMA
    assert CachingGenerator(_Generator(None), cache).key(prompt, AnswerSettings(), HITS) == ANSWER_KEY_WITH_IDS


def test_the_draft_reply_cache_key_is_unchanged(tmp_path):
    cache = ParsedReplies(tmp_path / "draft-replies")
    asker = Asker(_Client('{"drafts": [{"question": "q?", "quote": "a b c d", "facts": ["x"], "type": "number"}]}'),
                  ChatOptions("qwen3:4b", num_ctx=16384), DIGEST, ("completion", "thinking"), cache)
    outcome = asker.ask(PromptTemplate.bundled("harness", "draft"), drafts_schema(3), per_page=3,
                        page="Employees get 25 days.")
    assert outcome.reply["drafts"][0]["question"] == "q?" and not outcome.from_cache
    assert [p.stem for p in Path(tmp_path / "draft-replies").rglob("*.json")] == [DRAFT_KEY]


def test_the_judge_reply_cache_key_is_unchanged(tmp_path):
    row = make_row("C01", {}, answer="Employees get 25 days. Hotels cost EUR 150.", question="Leave?",
                   retrieved=["handbook.pdf#p1", "handbook.pdf#p2"])
    claims = ["Employees get 25 days.", "Hotels cost EUR 150."]
    template = judge_template()
    prompt = template.render(**judge_values(row, claims))
    for backend, expected in (("ollama", JUDGE_KEY), ("openai", JUDGE_KEY_OPENAI)):
        asker = judge_asker(_Client("{}", backend), ChatOptions("qwen3:4b", num_ctx=16384), DIGEST, ("thinking",),
                            AnswerCache(tmp_path / "judge-replies"))
        assert asker.store.key(asker, template, prompt, verdicts_schema(len(claims))) == expected, backend
