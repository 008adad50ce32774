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
    # notices (rag.agent.nodes)
    (r"the model could not be reached", "无法连接模型"),
    (r"assumed not enough \((?P<detail>.*)\)", "按“不够”处理（{detail}）"),
    (r"took the retrieval path \((?P<detail>.*)\)", "改为查书（{detail}）"),
    (r"router output invalid twice", "路由输出两次无效"),
    (r"model call failed at (?P<where>\S+) \((?P<what>.*?); (?P<cls>\w+)\): (?P<rest>.*)",
     "调用 {where} 的模型失败（{what}；{cls}）：{rest}"),
    (r"evaluation output invalid twice", "评估输出两次无效"),
    (r"evaluation retried once after: (?P<detail>.*)", "评估重试了一次，原因：{detail}"),
    (r"web search failed: (?P<detail>.*)", "网络搜索失败：{detail}"),
    (r"web search is not configured", "未配置网络搜索"),
    (r"generation failed: (?P<detail>.*)", "生成回答失败：{detail}"),
    (r"book search failed: (?P<detail>.*)", "检索本书失败：{detail}"),
    (r"no book index is loaded", "没有加载书库"),
    (r"could not rewrite the follow-up question: (?P<detail>.*)", "无法改写追问：{detail}"),
    (r"the router said simple, but the book uses (?P<names>.*): searching the book",
     "路由判断为简单问题，但书中用到了 {names}：改为查书"),
    (r"the judge said enough, but (?P<n>\d+) of (?P<m>\d+) part\(s\) had no evidence that checks out: not enough",
     "模型说“足够”，但 {m} 个部分中有 {n} 个的证据核对不上：判为不够"),
    (r"sentence check by the model failed: (?P<detail>.*)", "模型逐句核对失败：{detail}"),
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
