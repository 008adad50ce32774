"""The embedded model (``LLM_PROVIDER=local``): its file (``download``), llama.cpp in-process
(``runtime``) and the process's one instance with its state (``manager``)."""

from rag.local.download import DEFAULT_MODEL, DownloadError, ModelSpec, download, parse_model
from rag.local.manager import LocalModel, LocalModelError, LocalState, shared_model

__all__ = ["DEFAULT_MODEL", "DownloadError", "LocalModel", "LocalModelError", "LocalState", "ModelSpec",
           "download", "parse_model", "shared_model"]
