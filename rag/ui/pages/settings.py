"""The settings page: apply a session's own model / search settings (after checking the model's
endpoint), keep the non-secret ones in the browser (the keys only if asked), reset to the server's.
Handlers take ``(session, ...)`` and return component updates.

A session's settings are ``Settings.with_session`` of the server's (validated there); the server's
URLs never reach the page, and its LLM key is never sent to a URL a visitor typed.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from pydantic import SecretStr

from rag.agent.deps import Deps
from rag.errors import ConfigError, RagError
from rag.i18n import Msg, t
from rag.ui.layout import (
    Layout,
    local_model_editable,
    local_model_field,
    provider_choices,
    server_placeholder,
)
from rag.ui.pages.base import AppContext, MakeDeps, show
from rag.ui.probe import display_url, probe_endpoint
from rag.ui.session import Session

logger = logging.getLogger(__name__)

__all__ = ["SettingsForm", "SettingsPage", "apply_settings", "keepable_url", "local_model_file", "probe_target",
           "provider_choices"]

SAVED_FIELDS = ("base_url", "model", "provider", "searxng", "k", "rounds")  # never keys (unless opted in)


def keepable_url(url: str | None) -> str:
    """A URL the browser may keep among the non-secret settings: not one that carries credentials."""
    url = (url or "").strip()
    return "" if "@" in url.split("://", 1)[-1].split("/", 1)[0] else url


def probe_target(base: Any, *, base_url: str, key: str, model: str,
                 allow_endpoints: bool) -> tuple[str, str | None, bool] | None:
    """The endpoint to check before applying LLM settings: (url, key, typed by the user), or None
    when the LLM settings do not change or there is no endpoint to ask."""
    base_url, key, model = (base_url or "").strip(), (key or "").strip(), (model or "").strip()
    server_key = base.llm_api_key.get_secret_value() if base.llm_api_key else None
    if base_url and base_url != (base.llm_base_url or ""):
        if not allow_endpoints or not base_url.lower().startswith(("http://", "https://")):
            return None  # refused by apply_settings with its own message
        return base_url, key or None, True
    if not key and model == (base.llm_model or ""):
        return None  # nothing about the model changes
    server_base = base.llm_base_url or ("https://api.openai.com/v1" if (key or server_key) else None)
    if server_base is None:
        return None
    return server_base, key or server_key, False


@dataclass(frozen=True)
class SettingsForm:
    """The settings page's fields as a visitor filled them, in the order of the page's inputs
    (``rag.ui.layout.SettingsView.fields``); blank fields keep the server's values."""

    base_url: str = ""
    model: str = ""
    key: str = ""
    provider: str = "none"
    search_key: str = ""
    searxng: str = ""
    k: int = 6
    rounds: int = 1
    local_model: str = ""  # LOCAL_MODEL_PATH: the server's, set here only where the page may (``local_model_editable``)


def _refused(code: str, **params: Any) -> ConfigError:
    return ConfigError(Msg.of(code, level="error", **params))


def local_model_file(value: str, *, editable: bool) -> Path | None:
    """The GGUF file typed in the local model field, checked: None when the field is empty. Raises
    ``ConfigError`` when the page may not set it (a Space, a public page), the name does not end
    in .gguf, or there is no such file. The message names what was typed, never another path."""
    typed = (value or "").strip()
    if not typed:
        return None
    if not editable:
        raise _refused("settings.local_forbidden")
    path = Path(typed).expanduser()
    if path.suffix.lower() != ".gguf":
        raise _refused("settings.local_not_gguf", name=typed)
    if not path.is_file():
        raise _refused("settings.local_no_file", name=typed)
    return path.resolve()


def apply_settings(deps: Deps, index: Any | None, make_deps: MakeDeps | None, form: SettingsForm, *,
                   allow_endpoints: bool = True) -> Deps:
    """Deps for a session's settings. Blank fields keep the server's values (the page never holds
    the server's URLs), and the server's LLM key is never sent to a base URL the user typed in.
    ``allow_endpoints=False`` (ALLOW_SESSION_ENDPOINTS) refuses any user-typed base or SearXNG URL.
    Raises ``ConfigError`` (its ``.msg`` a ``settings.*`` code) for invalid settings."""
    base, k, rounds = deps.settings, int(form.k), int(form.rounds)
    base_url, model, key = (form.base_url or "").strip(), (form.model or "").strip(), (form.key or "").strip()
    provider = (form.provider or "none").strip().lower()
    search_key, searxng = (form.search_key or "").strip(), (form.searxng or "").strip()
    if (base_url or searxng) and not allow_endpoints:
        raise _refused("settings.endpoints_forbidden")
    heavy: dict[str, Any] = {}
    if base_url and base_url != (base.llm_base_url or ""):
        heavy["llm_base_url"] = base_url
        heavy["llm_api_key"] = SecretStr(key) if key else None  # never forward the server's key elsewhere
    elif key:
        heavy["llm_api_key"] = SecretStr(key)
    if model != (base.llm_model or ""):
        heavy["llm_model"] = model or None
    if provider != base.search_provider.strip().lower():
        heavy["search_provider"] = provider or "none"
    if search_key:
        names = {p.strip() for p in provider.split(",")}
        if "bocha" in names:
            heavy["bocha_api_key"] = SecretStr(search_key)
        if "tavily" in names:
            heavy["tavily_api_key"] = SecretStr(search_key)
    if searxng and searxng != (base.searxng_url or ""):
        heavy["searxng_url"] = searxng
    settings = base.with_session(retrieval_k=k, max_web_rounds=rounds, **heavy)
    if not heavy and k == base.retrieval_k and rounds == base.max_web_rounds:
        return deps
    if heavy:
        if make_deps is None:
            raise _refused("settings.no_make_deps")
        return make_deps(settings, index=index)
    return dataclasses.replace(deps, settings=settings)


class SettingsPage:
    def __init__(self, ctx: AppContext, layout: Layout) -> None:
        self.ctx, self.ui, self.shell = ctx, layout.settings, layout.shell

    def labels(self, lang: str) -> dict[Any, Any]:
        v, s = self.ui, self.ctx.settings
        return {
            v.note: gr.update(value=t(lang, "settings_note")),
            v.base_url: gr.update(label=t(lang, "llm_base_url"), placeholder=server_placeholder(s.llm_base_url, lang)),
            v.model: gr.update(label=t(lang, "llm_model")),
            v.key: gr.update(label=t(lang, "llm_api_key")),
            v.provider: gr.update(label=t(lang, "search_provider"), choices=provider_choices(s.search_provider, lang)),
            v.search_key: gr.update(label=t(lang, "search_api_key")),
            v.searxng: gr.update(label=t(lang, "searxng_url"), placeholder=server_placeholder(s.searxng_url, lang)),
            v.k: gr.update(label=t(lang, "retrieval_k")),
            v.rounds: gr.update(label=t(lang, "web_rounds")),
            v.local_model: gr.update(**local_model_field(s, lang)),
            v.remember: gr.update(label=t(lang, "remember_keys")),
            v.apply: gr.update(value=t(lang, "apply")),
            v.reset: gr.update(value=t(lang, "reset")),
        }

    def status(self, session: Session) -> dict[Any, Any]:
        return {self.ui.status: show(session.settings_status, session.lang)}

    def fields_of(self, session: Session, stored: dict[str, Any]) -> dict[Any, Any]:
        """The fields as the session's saved settings (and the browser's keys, if kept) fill them."""
        saved, s, v = session.saved, self.ctx.settings, self.ui
        keys = (stored.get("keys") or {}) if stored.get("remember_keys") else {}
        return {
            v.base_url: saved.get("base_url", ""),
            v.model: gr.update(value=saved.get("model", s.llm_model or "")),
            v.key: keys.get("llm", ""),
            v.provider: saved.get("provider", s.search_provider),
            v.search_key: keys.get("search", ""),
            v.searxng: saved.get("searxng", ""),
            v.k: saved.get("k", s.retrieval_k),
            v.rounds: saved.get("rounds", s.max_web_rounds),
            v.local_model: "",  # the server's path is never shown
            v.remember: bool(stored.get("remember_keys")),
        }

    def _apply(self, form: SettingsForm) -> Deps:
        ctx = self.ctx
        return apply_settings(ctx.deps, ctx.index, ctx.make_deps, form, allow_endpoints=ctx.endpoints_allowed)

    def restore(self, session: Session, saved: dict[str, Any], keys: dict[str, Any]) -> None:
        """Apply the settings a browser kept, on a session the server no longer knows."""
        s = self.ctx.settings
        fields = {name: saved.get(name) for name in SAVED_FIELDS}
        try:
            new_deps = self._apply(SettingsForm(
                base_url=str(fields["base_url"] or ""), model=str(fields["model"] or ""), key=str(keys.get("llm") or ""),
                provider=str(fields["provider"] or s.search_provider), search_key=str(keys.get("search") or ""),
                searxng=str(fields["searxng"] or ""), k=int(fields["k"] or s.retrieval_k),
                rounds=int(fields["rounds"] if fields["rounds"] is not None else s.max_web_rounds)))
        except Exception as exc:  # noqa: BLE001 - a stale saved setting must not break the page
            logger.info("saved settings not restored: %s", type(exc).__name__)
            return
        session.saved = {k: v for k, v in fields.items() if v not in (None, "")}
        if new_deps is not self.ctx.deps:
            session.deps, session.graph, session.custom = self.ctx.session_deps(new_deps, session), None, True
            session.settings_status = Msg.of("settings_restored")

    def _check_endpoint(self, session: Session, base_url: str, key: str, model: str) -> tuple[str, Any, list[Msg]]:
        """Ask the model's endpoint before applying: (model, the model field's update, notes).
        Raises ``ConfigError`` when the endpoint cannot be used."""
        target = probe_target(self.ctx.settings, base_url=base_url, key=key, model=model,
                              allow_endpoints=self.ctx.endpoints_allowed)
        if target is None:
            return model, gr.update(), []
        url, probe_key, own = target
        where: Msg | str = display_url(url) if own else Msg.of("server_endpoint")
        found = probe_endpoint(url, probe_key, timeout=5.0, where=where if isinstance(where, str) else where.text(session.lang))
        if found.status == "unreachable":
            raise _refused("probe_unreachable", where=where, why=Msg.of(f"why_{found.why or 'connect'}"))
        if found.status == "rejected":
            raise _refused("probe_rejected", where=where, status=found.http_status)
        if found.status != "ok":
            return model, gr.update(), [Msg.of("probe_no_list", where=where, status=found.http_status)]
        if not (model or "").strip() and found.models:
            model = found.models[0]
        if not (model or "").strip():
            raise _refused("probe_no_model", where=where)
        return model, gr.update(choices=list(found.models) or [model], value=model), [
            Msg.of("probe_ok", where=where, n=len(found.models))]

    def on_apply(self, session: Session | None, *fields: Any) -> dict[Any, Any]:
        """Apply the page's fields (``SettingsForm``, in its order) after checking the model's endpoint."""
        session = self.ctx.ensure_session(session)
        model_update: Any = gr.update()
        notes: list[Msg] = []
        form = SettingsForm(*fields)
        base_url, key, provider, search_key, searxng = form.base_url, form.key, form.provider, form.search_key, form.searxng
        k, rounds = form.k, form.rounds
        try:
            local_file = local_model_file(form.local_model, editable=local_model_editable(self.ctx.settings))
            model, model_update, notes = self._check_endpoint(session, base_url, key, form.model)
            new_deps = self._apply(dataclasses.replace(form, model=model, k=int(k), rounds=int(rounds)))
        except Exception as exc:  # noqa: BLE001 - every failure is a line under the button
            session.settings_status = _failed(exc)
            return {self.shell.session: session, self.shell.banner: self.ctx.banner_html(session),
                    **self.status(session)}
        extra: dict[Any, Any] = {}
        if local_file is not None and str(local_file) != str(self.ctx.settings.local_model_path or ""):
            self.ctx.use_local_file(local_file)
            notes.append(Msg.of("settings.local_model_starting", name=local_file.name))
            extra = {self.ui.local_model: "", self.shell.banner_timer: gr.Timer(active=True)}
        with session.lock:
            session.deps = self.ctx.session_deps(new_deps, session)
            session.graph = None  # rebuilt on the next question; conversation memory is kept
            session.custom = new_deps is not self.ctx.deps
            session.llm_unreachable = None
            session.saved = {name: value for name, value in zip(
                SAVED_FIELDS, (keepable_url(base_url), (model or "").strip(), (provider or "").strip(),
                               keepable_url(searxng), int(k), int(rounds)), strict=True) if value not in ("", None)}
            session.saved_keys = {"llm": (key or "").strip(), "search": (search_key or "").strip()}
        logger.info("session %s applied custom settings (llm=%s, search=%s)", session.id[:8],
                    new_deps.llm is not None, new_deps.settings.search_provider)
        session.settings_status = Msg.of("settings_applied")
        text = "  \n".join([show(session.settings_status, session.lang), *(show(n, session.lang) for n in notes)])
        return {self.shell.session: session, self.shell.banner: self.ctx.banner_html(session),
                self.ui.status: text, self.ui.model: model_update, **extra}

    def save_browser(self, session: Session | None, remember: bool, stored: Any) -> Any:
        """What the browser keeps: the session id, language and settings (the keys only if asked)."""
        if not isinstance(session, Session):
            return gr.update()
        stored = stored if isinstance(stored, dict) else {}
        value = {**stored, "sid": session.id, "owner": session.owner, "lang": session.lang,
                 "settings": dict(session.saved)}
        if remember:
            value["remember_keys"] = True
            value["keys"] = {k: v for k, v in session.saved_keys.items() if v}
        else:
            value.pop("remember_keys", None)
            value.pop("keys", None)
        return value

    def on_reset(self, session: Session | None) -> list[Any]:
        session = self.ctx.ensure_session(session)
        with session.lock:
            session.deps = None
            session.graph = None
            session.custom = False
            session.saved = {}
            session.saved_keys = {}
            session.llm_unreachable = None
        session.settings_status = Msg.of("settings_reset")
        s = self.ctx.settings
        return [
            session, self.ctx.banner_html(session), show(session.settings_status, session.lang),
            "", gr.update(value=s.llm_model or "", choices=[s.llm_model or ""]), "", s.search_provider, "", "",
            s.retrieval_k, s.max_web_rounds, "",
        ]


def _failed(exc: Exception) -> Msg:
    """The status line of a refused apply: the endpoint check's own line, else "invalid settings: ..."."""
    if isinstance(exc, RagError):
        return exc.msg if exc.msg.code.startswith("probe_") else Msg.of("settings_failed", level="error", message=exc.msg)
    if isinstance(exc, ValueError):
        return Msg.of("settings_failed", level="error", message=str(exc))
    logger.warning("applying session settings failed: %s", type(exc).__name__)
    return Msg.of("settings_failed", level="error", message=type(exc).__name__)
