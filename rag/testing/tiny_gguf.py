"""A tiny GGUF chat model for tests: llama architecture, random weights, a byte-level vocabulary.

``write_tiny_gguf(path)`` writes a model of a few hundred KB in well under a second that
llama.cpp (``xllamacpp``) loads and runs: its replies are noise, but they are real tokens from a
real forward pass, so the local runtime's HTTP API, streaming, JSON-schema constrained output and
time limits can be tested without downloading anything.

The vocabulary is GPT-2 style byte-level BPE: the 256 byte tokens (so any text, and any JSON a
grammar allows, can be written), a few merges, and the ChatML control tokens; the chat template in
``tokenizer.chat_template`` is ChatML. The weights come from a seeded generator, so every file
written is the same.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

#: ChatML, as Qwen's instruct models use it.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

# Shape of the model: small enough to write and load in a blink, big enough to be a real llama.
N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
N_FF = 128
N_CTX_TRAIN = 4096
SEED = 23

# Byte-pair merges over GPT-2's byte alphabet ("Ġ" is the space byte): a handful, so the BPE path runs.
_MERGES = ("Ġ t", "h e", "i n", "e r", "a n", "o n", "Ġt he", "r e", "Ġ a", "a t", "e n", "o r",
           "\" :", "Ġ \"", "t r", "u e", "f a", "l s", "fa ls", "tr ue")

# llama.cpp token types (gguf.TokenType): NORMAL = 1, CONTROL = 3.
_NORMAL = 1
_CONTROL = 3


def byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode table: the printable character that stands for each byte 0..255."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    table = dict(zip(printable, codes, strict=True))
    return [chr(table[b]) for b in range(256)]


def vocabulary() -> tuple[list[str], list[int], list[str]]:
    """(tokens, token types, merges): the 256 byte tokens, one token per merge, then the specials."""
    tokens = byte_alphabet()
    merges = list(_MERGES)
    for merge in merges:
        left, right = merge.split(" ")
        merged = left + right
        if merged not in tokens:
            tokens.append(merged)
    types = [_NORMAL] * len(tokens)
    for special in SPECIAL_TOKENS:
        tokens.append(special)
        types.append(_CONTROL)
    return tokens, types, merges


def _output_weight(matrix: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Zero the output rows of the tokens a reply should not be made of: bytes outside printable
    ASCII (alone they are broken UTF-8), spaces and control bytes (endless JSON whitespace), and
    the specials other than ``<|im_end|>``. Their logit is then 0 while the others' are large
    (random rows, scaled up), so replies are printable ASCII and a JSON grammar is walked to its
    end instead of padded out with whitespace: tests can bound a reply by its schema."""
    printable = {chr(c) for c in range(0x21, 0x7F)}
    alphabet = byte_alphabet()
    allowed = {alphabet[c] for c in range(0x21, 0x7F)} | {t for t in tokens if t.startswith("Ġ") and len(t) > 1}
    for i, token in enumerate(tokens):
        keep = token == "<|im_end|>" or (token in allowed and token not in SPECIAL_TOKENS) or (
            len(token) > 1 and token not in SPECIAL_TOKENS and all(ch in printable for ch in token))
        if not keep:
            matrix[i] = 0.0
    return matrix


def write_tiny_gguf(path: Path) -> Path:
    """Write the tiny chat model to ``path`` (its folder must exist) and return ``path``."""
    import gguf  # a dev dependency: only tests and benches write models

    path = Path(path)
    tokens, types, merges = vocabulary()
    n_vocab = len(tokens)
    rng = np.random.default_rng(SEED)

    def weight(*shape: int, scale: float | None = None) -> np.ndarray:
        std = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * std).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("enough-rag tiny test model")
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_eot_token_id(tokens.index("<|im_end|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML_TEMPLATE)

    # numpy shape is (rows, columns) = ggml's ne reversed: (out features, in features).
    writer.add_tensor("token_embd.weight", weight(n_vocab, N_EMBD, scale=1.0))
    for i in range(N_LAYER):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(N_EMBD, N_FF))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output.weight", _output_weight(weight(n_vocab, N_EMBD, scale=4.0 / np.sqrt(N_EMBD)), tokens))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    logger.debug("wrote a tiny GGUF (%d tokens, %d bytes) to %s", n_vocab, path.stat().st_size, path.name)
    return path
