"""multilingual-e5-small with its 12 encoder layers run by onnxruntime: the same weights, tokens,
embeddings, pooling and batching as ``rag.index.e5blas.E5Blas``, so the vectors are the same (cosine
>= 0.99999, see the tests) and stay under the same index key; only the layers' arithmetic moves from
numpy to onnxruntime's CPU kernels.

Why (2 cores, same session, ``bench/retrieval.py`` / ``bench/ingest.py --embed-engine``): a question
embeds in ~21-24 ms instead of ~33-37 ms (numpy loses the difference in small matmuls, Python and
temporaries), 4 concurrent searches take ~72 ms instead of ~130 ms (p50), and 西游记 embeds with
~15% fewer CPU seconds (570 instead of 675). The price is ~100 MB more memory (onnxruntime pre-packs the weights for its
matmuls; without that, questions took 50 ms). int8 weights for passages too were measured (1.6x
faster), but their vectors differ (cosine ~0.995, 30% of top-1 results change): another vector space,
not used.

With ``query_int8`` (``EMBED_QUERY_INT8``, on by default) questions run on an int8 copy of all the
layers in one model (``query_model_int8``: weights int8 per output column, activations quantized as
they come), ~12 ms instead of ~22, for ~45 MB. Only the question vector moves (cosine ~0.99 to the
float32 one); the passage vectors, and so the index, stay float32. Recall on the dev and held-out
sets stayed within one question, and 4 concurrent searches take ~39 ms instead of ~74
(``bench/results/retrieval_query_int8.json``).

Each layer is its own small ONNX model built in memory from the weights at load (~1 s), with
onnxruntime's fused BERT operators, run on row groups of at most ``ROW_TOKENS`` padded tokens:
``pause`` is called before each run, so a background embedding stops within a few milliseconds when
a question needs the cores (``rag.index.blas.SearchFirst``), as the numpy forward pass does. Every
session runs on its caller's thread (one intra-op thread, no spinning, no memory arena): parallelism
stays the index's own thread pool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import ConfigError
from rag.index.e5blas import E5Blas, _no_pause

log = logging.getLogger(__name__)

ROW_TOKENS = 512  # padded tokens per onnxruntime call: a pause point every few tens of ms (larger runs were slower)


def _int8_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``w`` [in, out] as int8 with a scale per output column (symmetric: zero point 0), as
    onnxruntime's dynamic quantizer makes them (``per_channel=True``, signed)."""
    scale = np.abs(w).max(axis=0) / np.float32(127)
    scale[scale == 0] = 1.0
    return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def _layer_nodes(e5: E5Blas, i: int, x: str, y: str, mask: str, prefix: str = "",
                 int8: bool = False) -> tuple[list[Any], list[Any]]:
    """The nodes and weights of layer ``i`` of ``e5``, from tensor ``x`` to tensor ``y``, with
    onnxruntime's fused BERT operators (``Attention``: QKV projection and attention in one;
    ``SkipLayerNormalization``: bias, residual and LayerNorm; ``FastGelu``: bias and the tanh form of
    GELU, as E5Blas's). ``mask`` is [B, L] int32, 1 for a token, 0 for padding. With ``int8`` the four
    weight matrices are int8 (``_int8_columns``) and the activations are quantized as they come
    (``QAttention``, ``DynamicQuantizeMatMul``); everything else stays float32."""
    from onnx import helper, numpy_helper

    ly = e5._layers[i]
    ms = "com.microsoft"
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), prefix + name))
        return prefix + name

    def t(name: str) -> str:
        return prefix + name

    def matmul(a: str, name: str, w: np.ndarray) -> str:
        if not int8:
            nodes.append(helper.make_node("MatMul", [a, const(name, w)], [t(name + "_out")]))
        else:
            wq, scale = _int8_columns(w)
            nodes.append(helper.make_node("DynamicQuantizeMatMul", [a, const(name, wq), const(name + "_scale", scale)],
                                          [t(name + "_out")], domain=ms))
        return t(name + "_out")

    eps = float(e5.eps)
    if not int8:
        nodes.append(helper.make_node("Attention", [x, const("qkv_w", ly.qkv_w), const("qkv_b", ly.qkv_b), mask],
                                      [t("ctx")], domain=ms, num_heads=e5.NH))
    else:
        wq, scale = _int8_columns(ly.qkv_w)
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [t("xq"), t("xq_scale"), t("xq_zero")]),
            helper.make_node("QAttention", [t("xq"), const("qkv_w", wq), const("qkv_b", ly.qkv_b), t("xq_scale"),
                                            const("qkv_scale", scale), mask, t("xq_zero"),
                                            const("qkv_zero", np.zeros(len(scale), np.int8))],
                             [t("ctx")], domain=ms, num_heads=e5.NH),
        ]
    ao = matmul(t("ctx"), "ao_w", ly.ao_w)
    nodes.append(helper.make_node("SkipLayerNormalization", [ao, x, const("aln_w", ly.aln_w), const("aln_b", ly.aln_b),
                                                             const("ao_b", ly.ao_b)], [t("aln")], domain=ms, epsilon=eps))
    fi = matmul(t("aln"), "fi_w", ly.fi_w)
    nodes.append(helper.make_node("FastGelu", [fi, const("fi_b", ly.fi_b)], [t("gelu")], domain=ms))
    fo = matmul(t("gelu"), "fo_w", ly.fo_w)
    nodes.append(helper.make_node("SkipLayerNormalization", [fo, t("aln"), const("oln_w", ly.oln_w),
                                                             const("oln_b", ly.oln_b), const("fo_b", ly.fo_b)],
                                  [y], domain=ms, epsilon=eps))
    return nodes, inits


def _model(e5: E5Blas, name: str, nodes: list[Any], inits: list[Any]) -> Any:
    """An ONNX model of ``nodes``: inputs x [B, L, H] float and mask [B, L] int32, output y [B, L, H]."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", e5.H]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "L", e5.H])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="enough-rag")
    model.ir_version = 10
    return model


def layer_model(e5: E5Blas, i: int) -> bytes:
    """Layer ``i`` of ``e5`` as a serialized ONNX model (see ``_layer_nodes``): x -> y."""
    nodes, inits = _layer_nodes(e5, i, "x", "y", "mask")
    return bytes(_model(e5, f"e5_small_layer_{i}", nodes, inits).SerializeToString())


def query_model_int8(e5: E5Blas) -> bytes:
    """All layers of ``e5`` in one serialized ONNX model with int8 weights: what questions run on
    with ``query_int8`` (see ``_layer_nodes``): x -> y."""
    nodes: list[Any] = []
    inits: list[Any] = []
    for i in range(e5.NL):
        x = "x" if i == 0 else f"h{i}"
        y = "y" if i == e5.NL - 1 else f"h{i + 1}"
        layer_nodes, layer_inits = _layer_nodes(e5, i, x, y, "mask", prefix=f"l{i}_", int8=True)
        nodes += layer_nodes
        inits += layer_inits
    return bytes(_model(e5, "e5_small_query_int8", nodes, inits).SerializeToString())


def _release_freed_memory() -> None:
    """Give the float32 weights just freed back to the system (glibc keeps freed memory otherwise)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the memory is reused by the process instead
        pass


class OnnxError(ConfigError):
    """onnxruntime is missing or cannot run the layers (the weights themselves were fine)."""


class E5Onnx(E5Blas):
    """``E5Blas`` whose ``_forward`` runs the layers with onnxruntime. Raises ``OnnxError`` when
    onnxruntime is missing or cannot load the layers, ``ConfigError`` for bad weights."""

    def __init__(self, path: str | Path | None = None, query_int8: bool = False) -> None:
        try:  # before the weights load: a platform without the wheels falls back at once
            import onnx  # noqa: F401 - layer_model builds with it
            import onnxruntime as ort
        except ImportError as exc:
            raise OnnxError(f"onnxruntime is not installed ({exc}); the numpy engine works without it") from exc
        super().__init__(path)
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # the caller's thread: the index's pool gives the parallelism
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.enable_cpu_mem_arena = False  # an arena per layer kept ~100 MB more, for no speed
            options.log_severity_level = 3
            query_model = self._int8_model() if query_int8 else None  # from the float32 weights, freed below
            self._sessions = []
            for i in range(self.NL):
                self._sessions.append(ort.InferenceSession(layer_model(self, i), options,
                                                           providers=["CPUExecutionProvider"]))
                self._layers[i] = None  # type: ignore[call-overload]  # the session holds the weights now
        except Exception as exc:  # noqa: BLE001 - any failure to build or load the layers is a setup error
            raise OnnxError(f"onnxruntime could not load the e5 layers ({type(exc).__name__}: {exc})") from exc
        self._layers = []
        # ~45 MB once freed memory is trimmed (glibc may keep ~100 MB more of the passages' temporaries)
        self._query_session = self._int8_session(query_model, options) if query_model else None
        del query_model
        _release_freed_memory()

    def _int8_model(self) -> bytes | None:
        try:
            return query_model_int8(self)
        except Exception as exc:  # noqa: BLE001 - questions still work in float32
            self._int8_failed(exc)
            return None

    def _int8_session(self, model: bytes, options: Any) -> Any:
        """The int8 session questions run on, or None (with a warning) when onnxruntime cannot load
        it: then questions run on the float32 layers."""
        import onnxruntime as ort

        try:
            return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - questions still work in float32
            self._int8_failed(exc)
            return None

    @staticmethod
    def _int8_failed(exc: Exception) -> None:
        log.warning("onnxruntime could not load the int8 question model (%s: %s); questions run in float32",
                    type(exc).__name__, exc)

    @property
    def query_int8(self) -> bool:
        """Whether questions run on the int8 model."""
        return self._query_session is not None

    def _forward_for(self, is_query: bool) -> Callable[..., np.ndarray]:
        return self._forward_query if is_query and self._query_session is not None else self._forward

    @staticmethod
    def _padded(segments: list[list[int]], packed: np.ndarray, H: int) -> tuple[np.ndarray, np.ndarray]:
        """``packed`` [tokens, H] as x [B, L, H] (zeros for padding) and the token mask [B, L]."""
        lengths = np.asarray([len(s) for s in segments])
        width = int(lengths.max())
        x = np.zeros((len(segments), width, H), dtype=np.float32)
        real = np.arange(width)[None, :] < lengths[:, None]  # [B, L]: token, not padding
        x[real] = packed  # row-major: each segment's tokens in order
        return x, real

    @staticmethod
    def _mean(x: np.ndarray, real: np.ndarray) -> np.ndarray:
        return (x * real[:, :, None]).sum(axis=1) / real.sum(axis=1, keepdims=True).astype(np.float32)

    def _forward(self, segments: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        pause = pause or _no_pause
        x, real = self._padded(segments, self._embed(segments), self.H)
        mask = real.astype(np.int32)
        rows = max(1, ROW_TOKENS // x.shape[1])
        for session in self._sessions:
            for a in range(0, len(segments), rows):
                pause()
                (x[a : a + rows],) = session.run(None, {"x": x[a : a + rows], "mask": mask[a : a + rows]})
        return self._mean(x, real)

    def _forward_query(self, segments: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        """A question's forward pass: all layers in one run of the int8 model (a question is what the
        background embedding pauses for, so it has no pause points of its own)."""
        session = self._query_session
        assert session is not None, "chosen only when the int8 query model is loaded"
        x, real = self._padded(segments, self._embed(segments), self.H)
        (y,) = session.run(None, {"x": x, "mask": real.astype(np.int32)})
        return self._mean(y, real)
