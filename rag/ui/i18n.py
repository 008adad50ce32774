"""Until every producer emits ``rag.i18n.Msg`` codes: English messages written by the code, shown in
Chinese by matching them against known wordings. Labels, node titles and the language choice live in
``rag.i18n``."""

from __future__ import annotations

import re

from rag.i18n import Msg, node_title, pick_language, t, text

__all__ = ["message", "node_title", "pick_language", "t"]


# --------------------------------------------------------------------------- messages from the code
# Error messages, notices, sentence reasons and part details are written in English by the code
# (rag.agent.nodes, rag.checks; rag.index emits codes). In Chinese mode, the known ones are shown in Chinese; each
# message is split at "; " and every piece is matched on its own, and anything not known stays as
# written (a file name, an HTTP error) rather than being guessed at.
_ZH_MESSAGES: tuple[tuple[str, str], ...] = (
    # web rounds' notes (rag.search, rag.agent.nodes.web)
    (r"budget (?P<used>\d+)/(?P<total>\w+)(?P<rest>.*)", "搜索额度 {used}/{total}{rest}"),
    (r"cache hit", "缓存命中"),
    (r"cache miss", "缓存未命中"),
    (r"no results", "没有结果"),
    # check details and reasons are codes (rag.checks); these rows remain for the texts that are still
    # composed as English: a sentence's model label (rag.agent.nodes, check.sentence_model_label) and a
    # part's relevance check (rag.agent.judge, check.relevance_no) appended to the check's English text
    (r"its facts are in the cited sources", "其中的事实见于所引来源"),
    (r"the model: (?P<label>[a-z]+) \((?P<why>.*)\)", "模型判断：{label}（{why}）"),
    (r"quote verbatim", "引文逐字吻合"),
    (r"quote matched (?P<r>[\d.]+)", "引文近似吻合（{r}）"),
    (r"answer found in the quoted passage text(?P<where> \(cited \[\d+\], found in \[\d+\]\))?",
     "答案见于引文所在的原文{where}"),
    (r"yes/no answer", "是非题答案"),
    (r"the quote states the answer \((?P<p>\d+%) of its content\)", "引文说出了答案（内容相符 {p}）"),
    (r"quote (?:verbatim|matched [\d.]+) in the chapter heading", "引文见于章回标题"),
    (r"(?P<detail>.*) \(covered by the citation that closes its run\)", "{detail}（由段末的引用标注覆盖）"),
    (r"(?P<s>.*) \(not examined by the judge\)", "{s}（评判没有检查这一问）"),
    (r"relevance check: the quote does not state the answer", "相关性检查：引文并没有说出答案"),
)
_ZH_COMPILED = tuple((re.compile(pattern, re.S), template) for pattern, template in _ZH_MESSAGES)
_ZH_WHERE = re.compile(r" \(cited \[(\d+)\], found in \[(\d+)\]\)")


def _zh_piece(piece: str) -> str:
    for pattern, template in _ZH_COMPILED:
        m = pattern.fullmatch(piece.strip())
        if m:
            groups = {k: ("" if v is None else v) for k, v in m.groupdict().items()}
            if "detail" in groups:
                groups["detail"] = message(groups["detail"], "zh") if groups["detail"] else ""
            if "where" in groups:
                groups["where"] = _ZH_WHERE.sub(r"（模型标注 [\1]，实际见于 [\2]）", groups["where"])
            return template.format(**groups)
    return piece


def message(msg: Msg | str | None, lang: str) -> str:
    """A message from the code in ``lang``: a ``Msg`` from its catalogue; an English sentence
    unchanged in English and, in Chinese, each known "; "-separated piece translated, unknown
    pieces as written."""
    if isinstance(msg, Msg):
        return text(msg, lang)
    if lang != "zh" or not msg:
        return msg or ""
    return "；".join(_zh_piece(p) for p in _top_level_pieces(msg))


def _top_level_pieces(text: str) -> list[str]:
    """``text`` split at "; " outside brackets (a detail in parentheses stays whole)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([（":
            depth += 1
        elif ch in ")]）":
            depth = max(0, depth - 1)
        elif ch == ";" and depth == 0 and text.startswith("; ", i):
            pieces.append(text[start:i])
            start = i + 2
    pieces.append(text[start:])
    return pieces
