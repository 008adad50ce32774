"""multilingual-e5-small with its 12 encoder layers run by onnxruntime: the same weights, tokens,
embeddings, pooling and batching as ``rag.index.e5blas.E5Blas``, so the vectors are the same (cosine
>= 0.99999, see the tests) and stay under the same index key; only the layers' arithmetic moves from
numpy to onnxruntime's CPU kernels.

Why (measured on 2 cores, bench/results/embed_engines_onnx.json): a question's forward pass takes
~22 ms instead of ~38 ms (numpy spends the difference between small matmuls, in Python and in
temporaries), and passages embed ~10% faster. onnxruntime was also measured with int8 weights (3x
faster questions, 1.6x faster passages), but those vectors differ (cosine ~0.995, 30% of top-1
results change), so they would be another vector space; not used.

Each layer is its own small ONNX model (built in memory from the weights at load, ~1 s), run on
row groups of at most ``ROW_TOKENS`` tokens: ``pause`` is called before each of those runs, so a
background embedding stops within a few milliseconds when a question needs the cores
(``rag.index.blas.SearchFirst``), as the numpy forward pass does. Every session runs on its caller's
thread (one intra-op thread, no spinning): parallelism stays the index's own thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import ConfigError
from rag.index.e5blas import E5Blas, _no_pause

ROW_TOKENS = 512  # padded tokens per onnxruntime call: a pause point every few milliseconds
_NEG = np.float32(-1e9)


def available() -> bool:
    """Whether onnxruntime and onnx import (both are dependencies; a platform without a wheel falls back)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def layer_model(e5: E5Blas, i: int) -> bytes:
    """Layer ``i`` of ``e5`` as a serialized ONNX model: inputs x [B, L, H] and the additive attention
    bias [B, 1, 1, L] (0 for a token, -1e9 for padding), output y [B, L, H]. GELU is the tanh form,
    as E5Blas's."""
    from onnx import TensorProto, helper, numpy_helper

    H, NH, hd = e5.H, e5.NH, e5.hd
    ly = e5._layers[i]
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], out: str, **kw: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], **kw))
        return out

    const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    const("heads", np.array([0, 0, NH, hd], dtype=np.int64))
    const("merged", np.array([0, 0, H], dtype=np.int64))
    const("split", np.array([H, H, H], dtype=np.int64))
    qkv = node("Add", [node("MatMul", ["x", const("qkv_w", ly.qkv_w)], "qkv_mm"), const("qkv_b", ly.qkv_b)], "qkv")
    nodes.append(helper.make_node("Split", [qkv, "split"], ["q0", "k0", "v0"], axis=-1))
    q = node("Transpose", [node("Reshape", ["q0", "heads"], "q1")], "q", perm=[0, 2, 1, 3])  # [B, NH, L, hd]
    k = node("Transpose", [node("Reshape", ["k0", "heads"], "k1")], "k", perm=[0, 2, 3, 1])  # [B, NH, hd, L]
    v = node("Transpose", [node("Reshape", ["v0", "heads"], "v1")], "v", perm=[0, 2, 1, 3])
    att = node("MatMul", [node("Mul", [q, "scale"], "qs"), k], "att0")
    att = node("Softmax", [node("Add", [att, "bias"], "att1")], "att", axis=-1)
    ctx = node("Transpose", [node("MatMul", [att, v], "ctx0")], "ctx1", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, "merged"], "ctx")
    out = node("Add", [node("MatMul", [ctx, const("ao_w", ly.ao_w)], "ao_mm"), const("ao_b", ly.ao_b)], "ao")
    x = node("LayerNormalization", [node("Add", [out, "x"], "ares"), const("aln_w", ly.aln_w), const("aln_b", ly.aln_b)],
             "aln", axis=-1, epsilon=float(e5.eps))
    mid = node("Add", [node("MatMul", [x, const("fi_w", ly.fi_w)], "fi_mm"), const("fi_b", ly.fi_b)], "fi")
    mid = node("Gelu", [mid], "gelu", approximate="tanh")
    out = node("Add", [node("MatMul", [mid, const("fo_w", ly.fo_w)], "fo_mm"), const("fo_b", ly.fo_b)], "fo")
    node("LayerNormalization", [node("Add", [out, x], "ores"), const("oln_w", ly.oln_w), const("oln_b", ly.oln_b)],
         "y", axis=-1, epsilon=float(e5.eps))
    graph = helper.make_graph(
        nodes, f"e5_small_layer_{i}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["B", 1, 1, "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "L", H])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="enough-rag")
    model.ir_version = 10
    return bytes(model.SerializeToString())


class E5Onnx(E5Blas):
    """``E5Blas`` whose ``_forward`` runs the layers with onnxruntime. Raises ``ConfigError`` when
    onnxruntime is missing or cannot load the layers."""

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path)
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # the caller's thread: the index's pool gives the parallelism
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            self._sessions = [ort.InferenceSession(layer_model(self, i), options, providers=["CPUExecutionProvider"])
                              for i in range(self.NL)]
        except ImportError as exc:
            raise ConfigError(f"onnxruntime is not installed ({exc}); the numpy engine works without it") from exc
        except Exception as exc:  # noqa: BLE001 - any failure to build or load the layers is a setup error
            raise ConfigError(f"onnxruntime could not load the e5 layers ({type(exc).__name__}: {exc})") from exc
        self._layers = []  # the sessions hold the weights now; the float32 copies would double the memory

    def _forward(self, segments: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        pause = pause or _no_pause
        lengths = np.asarray([len(s) for s in segments])
        packed = self._embed(segments)
        width = int(lengths.max())
        x = np.zeros((len(segments), width, self.H), dtype=np.float32)
        real = np.arange(width)[None, :] < lengths[:, None]  # [B, L]: token, not padding
        x[real] = packed  # row-major: each segment's tokens in order
        bias = np.where(real, np.float32(0.0), _NEG).astype(np.float32)[:, None, None, :]
        rows = max(1, ROW_TOKENS // width)
        for session in self._sessions:
            for a in range(0, len(segments), rows):
                pause()
                (x[a : a + rows],) = session.run(None, {"x": x[a : a + rows], "bias": bias[a : a + rows]})
        return (x * real[:, :, None]).sum(axis=1) / lengths[:, None].astype(np.float32)
