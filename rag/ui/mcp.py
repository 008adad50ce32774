"""The script API as MCP tools, so an agent can ask about a book without the page: with MCP_SERVER=true, Gradio's own MCP server
(``launch(mcp_server=True)``, at ``/gradio_api/mcp/`` and ``/gradio_api/mcp/sse``) lists the public
endpoints, ``/ask`` and ``/ask_json``, as the tools ``ask`` and ``ask_json``; the page's events are
private (``api_visibility="private"``) and are neither API nor tools.

Gradio runs an MCP tool call by calling the endpoint again through ``gradio_client`` on loopback,
with the MCP request's headers. Two things are adjusted on the app's MCP server object:

- the address the MCP request came from reaches the endpoint in ``CLIENT_HEADER``, signed with a
  key of this process, so each MCP client gets the web-search budget of its own address (on
  loopback every call would come from 127.0.0.1, and an ``X-Forwarded-For`` the MCP client sent
  would be believed there); a header without a valid signature is ignored;
- a dict or list result (``ask_json``'s) is returned to the MCP client as JSON text, not as
  Python's ``repr``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from typing import Any

logger = logging.getLogger(__name__)

CLIENT_HEADER = "x-rag-mcp-client"
#: Set by Gradio's loopback client on the calls it makes for MCP tools (and by anyone who likes: not believed).
MCP_USER_HEADER = "x-gradio-user"
_KEY = secrets.token_bytes(32)


def _signature(address: str) -> str:
    return hmac.new(_KEY, address.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def sign_client(address: str) -> str:
    """``address`` and its signature, as ``CLIENT_HEADER`` carries them."""
    return f"{_signature(address)} {address}"


def verified_client(value: str | None) -> str | None:
    """The address in a ``CLIENT_HEADER`` value signed by this process, else None."""
    if not value or " " not in value:
        return None
    signature, address = value.split(" ", 1)
    return address if hmac.compare_digest(signature, _signature(address)) else None


def client_address(headers: Any, client_host: str | None) -> str | None:
    """Whose call this is, for its web-search budget: the signed address of an MCP call, else the
    address of the HTTP client. An unsigned ``MCP_USER_HEADER`` counts for nothing: any client can
    send it, and it must not buy a budget beside its own address's (an MCP call that Gradio made
    without the signature, should its MCP server not be the one adjusted, is loopback's)."""
    get = getattr(headers, "get", None)
    if callable(get):
        signed = verified_client(get(CLIENT_HEADER))
        if signed is not None:
            return signed or "mcp"
    return client_host or None


def _as_text(value: Any) -> Any:
    """A dict or list result as JSON text (files, which Gradio passes as dicts with a ``path``, stay)."""
    if isinstance(value, list) or (isinstance(value, dict) and not ("path" in value and "meta" in value)):
        return json.dumps(value, ensure_ascii=False)
    return value


def adapt_mcp_server(demo: Any) -> bool:
    """Adjust ``demo``'s MCP server object (see the module's docstring); False when it has none or
    its Gradio lacks what is adjusted (then MCP calls share one budget and get Python's repr)."""
    server = getattr(demo, "mcp_server_obj", None)
    prepare = getattr(server, "_prepare_tool_call_args", None)
    postprocess = getattr(server, "postprocess_output_data", None)
    if server is None or not callable(prepare) or not callable(postprocess):
        if server is not None:
            logger.warning("this Gradio's MCP server is not the one adjusted here: MCP clients share one "
                           "web-search budget")
        return False

    def prepare_tool_call_args(name: str, arguments: dict[str, Any]) -> Any:
        endpoint, args, headers, block_fn = prepare(name, arguments)
        request = server.mcp_server.request_context.request
        client = getattr(request, "client", None)
        headers[CLIENT_HEADER] = sign_client(str(getattr(client, "host", "") or ""))
        return endpoint, args, headers, block_fn

    def postprocess_output_data(data: Any, root_url: str) -> Any:
        return postprocess([_as_text(value) for value in data], root_url)

    server._prepare_tool_call_args = prepare_tool_call_args
    server.postprocess_output_data = postprocess_output_data
    return True
