/* Enough RAG UI behaviour. Loaded into <head> by rag.ui.blocks (no inline handlers in the HTML:
 * everything is delegated from the document, so re-rendered panels need nothing re-attached).
 * - citations [n] of book passages open the Sources panel and scroll inside it (never the page),
 *   highlight the passage and its verified quote, and offer a way back to the answer;
 * - a citation previews its source on hover and on keyboard focus;
 * - on narrow screens the chat and the side panels are views switched by a nav bar;
 * - Gradio's own strings follow the page's language switch (window.ragSetLocale). */
(() => {
  if (window.__ragUi) return;
  window.__ragUi = true;

  const narrow = () => window.matchMedia("(max-width: 760px)").matches;
  const TABS = { trace: "rag-tab-trace-button", sources: "rag-tab-sources-button",
                 books: "rag-tab-books-button", settings: "rag-tab-settings-button" };

  // ------------------------------------------------------------------ Gradio's own strings
  // Gradio picks its locale from the browser before the page's code runs, and a mounted component
  // keeps the strings it was mounted with. ragSetLocale(lang) changes the locale and resolves to
  // whether it changed; the page then remounts the components that show Gradio's strings.
  const gradioLocale = (() => {
    const nav = (navigator.language || "en").toLowerCase();
    if (nav === "zh-cn" || nav === "zh-sg" || nav === "zh-hans") return "zh-CN";
    if (nav.startsWith("zh-")) return "zh-TW";
    return nav.startsWith("zh") ? "en" : nav.split("-")[0];
  })();
  let currentLocale = gradioLocale;
  let corePromise = null;
  function core() {
    if (!corePromise) {
      const urls = performance.getEntriesByType("resource").map((e) => e.name)
        .concat(Array.from(document.querySelectorAll("link[rel=modulepreload], script[type=module]"))
          .map((el) => el.href || el.src || ""));
      const url = urls.find((u) => /\/assets\/core-[^/]*\.js(\?|$)/.test(u));
      corePromise = url ? import(url).catch(() => null) : Promise.resolve(null);
    }
    return corePromise;
  }
  window.ragSetLocale = async (lang) => {
    const locale = lang === "zh" ? "zh-CN" : "en";
    if (locale === currentLocale) return false;
    const mod = await core();
    if (!mod || typeof mod.changeLocale !== "function") return false;  // Gradio's strings stay as they are
    mod.changeLocale(locale);
    currentLocale = locale;
    document.documentElement.setAttribute("lang", locale);
    await new Promise((resolve) => setTimeout(resolve, 300));  // a lazily loaded locale's messages
    return true;
  };

  // ------------------------------------------------------------------ views (narrow screens)
  function selectTab(name) {
    const button = document.getElementById(TABS[name]);
    if (button && button.getAttribute("aria-selected") !== "true") button.click();
  }
  function setView(view) {
    document.body.classList.toggle("rag-view-side", view !== "chat");
    document.body.classList.toggle("rag-view-chat", view === "chat");
    document.body.dataset.ragView = view;
    document.querySelectorAll("#rag-nav .rag-nav-btn").forEach((b) =>
      b.setAttribute("aria-pressed", String(b.dataset.view === view)));
    if (view !== "chat") selectTab(view);
    if (narrow()) window.scrollTo({ top: 0 });
  }
  window.ragSetView = setView;

  // ------------------------------------------------------------------ scrolling inside a panel
  function scrollBox(el) {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (/(auto|scroll)/.test(style.overflowY) && p.scrollHeight > p.clientHeight + 1) return p;
    }
    return null;
  }
  function scrollWithin(el, center) {
    const box = scrollBox(el);
    if (!box) return;
    const top = el.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    box.scrollTop = center ? top - box.clientHeight / 2 + el.offsetHeight / 2 : top - 8;
  }
  function whenThere(id, tries, then) {
    const el = document.getElementById(id);
    if (el && el.getClientRects().length) then(el);  // there and shown (its tab is open)
    else if (tries > 0) requestAnimationFrame(() => whenThere(id, tries - 1, then));
  }

  // ------------------------------------------------------------------ citations
  let backTo = null;
  function showSource(id, link) {
    backTo = link;
    if (narrow()) setView("sources");
    else selectTab("sources");
    whenThere(id, 90, (card) => {
      const folded = card.closest("details");
      if (folded) folded.open = true;
      document.querySelectorAll(".src-card.is-target").forEach((x) => x.classList.remove("is-target"));
      card.classList.add("is-target");
      scrollWithin(card, false);
      const mark = card.querySelector("mark.quote-hl");
      if (mark) scrollWithin(mark, true);
      const back = card.querySelector(".back-to-answer");
      if (back) back.focus({ preventScroll: true });
    });
  }
  function goBack(card) {
    let link = backTo && document.body.contains(backTo) ? backTo : null;
    if (!link && card) link = document.querySelector(`#rag-chat a.cite[href="#${card.id}"]`);
    if (narrow()) setView("chat");
    if (link) {
      scrollWithin(link, true);
      link.focus({ preventScroll: true });
    }
  }

  // ------------------------------------------------------------------ preview on hover / focus
  let preview = null;
  function previewBox() {
    if (!preview) {
      preview = document.createElement("div");
      preview.id = "rag-cite-preview";
      preview.setAttribute("role", "tooltip");
      preview.hidden = true;
      (document.querySelector(".gradio-container") || document.body).appendChild(preview);
    }
    return preview;
  }
  function sourceOf(link) {
    // the hidden copy of the sources (always on the page, unlike the Sources tab), else the tab
    const href = link.getAttribute("href") || "";
    if (href.startsWith("#")) {
      return document.querySelector(`#rag-preview-store [data-src="${href.slice(1)}"]`)
        || document.getElementById(href.slice(1));
    }
    return Array.from(document.querySelectorAll("#rag-preview-store .web-card, #rag-sources .web-card"))
      .find((card) => { const a = card.querySelector("a.web-link"); return a && a.href === link.href; }) || null;
  }
  function showPreview(link) {
    const card = sourceOf(link);
    const box = previewBox();
    if (!card) { box.hidden = true; return; }
    const copy = card.cloneNode(true);
    copy.removeAttribute("id");
    copy.removeAttribute("data-src");
    copy.querySelectorAll(".back-to-answer").forEach((b) => b.remove());
    copy.classList.remove("is-target");
    box.replaceChildren(copy);
    if (link.classList.contains("cite-unsupported")) {
      const note = document.createElement("div");
      note.className = "pv-note";
      note.textContent = link.title || "";
      box.prepend(note);
    }
    box.hidden = false;
    const r = link.getBoundingClientRect();
    const width = Math.min(420, window.innerWidth - 16);
    box.style.width = `${width}px`;
    box.style.left = `${Math.max(8, Math.min(r.left, window.innerWidth - width - 8))}px`;
    const below = r.bottom + 6;
    const height = box.offsetHeight;
    box.style.top = `${below + height < window.innerHeight ? below : Math.max(8, r.top - height - 6)}px`;
    // open at the highlighted quote, not at the passage top
    const mark = box.querySelector("mark.quote-hl");
    box.scrollTop = 0;
    if (mark) {
      const top = mark.getBoundingClientRect().top - box.getBoundingClientRect().top;
      box.scrollTop = Math.max(0, top - box.clientHeight / 3);
    }
  }
  function hidePreview() {
    if (preview) preview.hidden = true;
  }
  const citeOf = (target) => (target && target.closest ? target.closest("#rag-chat a.cite") : null);

  document.addEventListener("click", (ev) => {
    const target = ev.target;
    if (!target || !target.closest) return;
    const cite = target.closest("#rag-chat a.cite-book");
    if (cite) {
      ev.preventDefault();
      ev.stopPropagation();
      hidePreview();
      const id = (cite.getAttribute("href") || "").slice(1);
      if (id) showSource(id, cite);
      return;
    }
    const back = target.closest(".back-to-answer");
    if (back) {
      ev.preventDefault();
      goBack(back.closest(".src-card"));
      return;
    }
    const nav = target.closest("#rag-nav .rag-nav-btn");
    if (nav) {
      setView(nav.dataset.view);
      return;
    }
    // The chat's copy button copies the message as it reads (Gradio's would copy its HTML markup).
    const copy = target.closest("#rag-chat .message-buttons button");
    const message = copy && copy.closest(".message-buttons").previousElementSibling;
    const content = message && message.querySelector(".message-content, [data-testid=bot], [data-testid=user]");
    if (content && navigator.clipboard) {
      ev.preventDefault();
      ev.stopPropagation();
      navigator.clipboard.writeText(content.innerText.trim()).then(() => {
        copy.classList.add("rag-copied");
        setTimeout(() => copy.classList.remove("rag-copied"), 1200);
      }, () => {});
    }
  }, true);
  document.addEventListener("mouseover", (ev) => { const c = citeOf(ev.target); if (c) showPreview(c); });
  document.addEventListener("mouseout", (ev) => { if (citeOf(ev.target)) hidePreview(); });
  document.addEventListener("focusin", (ev) => { const c = citeOf(ev.target); if (c) showPreview(c); else hidePreview(); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") hidePreview(); });
  window.addEventListener("scroll", (ev) => {  // the page scrolls: hide; the preview itself scrolls: keep
    if (preview && ev.target instanceof Node && preview.contains(ev.target)) return;
    hidePreview();
  }, true);
})();
