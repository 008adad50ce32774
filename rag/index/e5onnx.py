"""multilingual-e5-small with its 12 encoder layers run by onnxruntime: the same weights, tokens,
embeddings, pooling and batching as ``rag.index.e5blas.E5Blas``, so the vectors are the same (cosine
>= 0.99999, see the tests) and stay under the same index key; only the layers' arithmetic moves from
numpy to onnxruntime's CPU kernels.

Why (2 cores, same session, ``bench/retrieval.py`` / ``bench/ingest.py --embed-engine``): a question
embeds in ~21-24 ms instead of ~33-37 ms (numpy loses the difference in small matmuls, Python and
temporaries), 4 concurrent searches take ~72 ms instead of ~130 ms (p50), and 西游记 embeds with
~15% fewer CPU seconds (570 instead of 675). The price is ~100 MB more memory (onnxruntime pre-packs the weights for its
matmuls; without that, questions took 50 ms). int8 weights were also measured (3x faster questions,
1.6x faster passages), but their vectors differ (cosine ~0.995, 30% of top-1 results change): another
vector space, not used.

Each layer is its own small ONNX model built in memory from the weights at load (~1 s), with
onnxruntime's fused BERT operators, run on row groups of at most ``ROW_TOKENS`` padded tokens:
``pause`` is called before each run, so a background embedding stops within a few milliseconds when
a question needs the cores (``rag.index.blas.SearchFirst``), as the numpy forward pass does. Every
session runs on its caller's thread (one intra-op thread, no spinning, no memory arena): parallelism
stays the index's own thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import ConfigError
from rag.index.e5blas import E5Blas, _no_pause

ROW_TOKENS = 512  # padded tokens per onnxruntime call: a pause point every few tens of ms (larger runs were slower)


def layer_model(e5: E5Blas, i: int) -> bytes:
    """Layer ``i`` of ``e5`` as a serialized ONNX model with onnxruntime's fused BERT operators
    (``Attention``: QKV projection and attention in one; ``SkipLayerNormalization``: bias, residual
    and LayerNorm; ``FastGelu``: bias and the tanh form of GELU, as E5Blas's). Inputs x [B, L, H] and
    mask [B, L] (int32, 1 for a token, 0 for padding), output y [B, L, H]."""
    from onnx import TensorProto, helper, numpy_helper

    H = e5.H
    ly = e5._layers[i]
    ms = "com.microsoft"
    inits: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    eps = float(e5.eps)
    nodes = [
        helper.make_node("Attention", ["x", const("qkv_w", ly.qkv_w), const("qkv_b", ly.qkv_b), "mask"], ["ctx"],
                         domain=ms, num_heads=e5.NH),
        helper.make_node("MatMul", ["ctx", const("ao_w", ly.ao_w)], ["ao"]),
        helper.make_node("SkipLayerNormalization", ["ao", "x", const("aln_w", ly.aln_w), const("aln_b", ly.aln_b),
                                                    const("ao_b", ly.ao_b)], ["aln"], domain=ms, epsilon=eps),
        helper.make_node("MatMul", ["aln", const("fi_w", ly.fi_w)], ["fi"]),
        helper.make_node("FastGelu", ["fi", const("fi_b", ly.fi_b)], ["gelu"], domain=ms),
        helper.make_node("MatMul", ["gelu", const("fo_w", ly.fo_w)], ["fo"]),
        helper.make_node("SkipLayerNormalization", ["fo", "aln", const("oln_w", ly.oln_w), const("oln_b", ly.oln_b),
                                                    const("fo_b", ly.fo_b)], ["y"], domain=ms, epsilon=eps),
    ]
    graph = helper.make_graph(
        nodes, f"e5_small_layer_{i}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "L", H])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
                              producer_name="enough-rag")
    model.ir_version = 10
    return bytes(model.SerializeToString())


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

    def __init__(self, path: str | Path | None = None) -> None:
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
            self._sessions = []
            for i in range(self.NL):
                self._sessions.append(ort.InferenceSession(layer_model(self, i), options,
                                                           providers=["CPUExecutionProvider"]))
                self._layers[i] = None  # type: ignore[call-overload]  # the session holds the weights now
        except Exception as exc:  # noqa: BLE001 - any failure to build or load the layers is a setup error
            raise OnnxError(f"onnxruntime could not load the e5 layers ({type(exc).__name__}: {exc})") from exc
        self._layers = []
        _release_freed_memory()

    def _forward(self, segments: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        pause = pause or _no_pause
        lengths = np.asarray([len(s) for s in segments])
        packed = self._embed(segments)
        width = int(lengths.max())
        x = np.zeros((len(segments), width, self.H), dtype=np.float32)
        real = np.arange(width)[None, :] < lengths[:, None]  # [B, L]: token, not padding
        x[real] = packed  # row-major: each segment's tokens in order
        mask = real.astype(np.int32)
        rows = max(1, ROW_TOKENS // width)
        for session in self._sessions:
            for a in range(0, len(segments), rows):
                pause()
                (x[a : a + rows],) = session.run(None, {"x": x[a : a + rows], "mask": mask[a : a + rows]})
        return (x * real[:, :, None]).sum(axis=1) / lengths[:, None].astype(np.float32)
