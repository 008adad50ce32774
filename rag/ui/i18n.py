"""Until every producer emits ``rag.i18n.Msg`` codes: English messages written by the code, shown in
Chinese by matching them against known wordings. Labels, node titles and the language choice live in
``rag.i18n``."""

from __future__ import annotations

import re

from rag.i18n import Msg, node_title, pick_language, t, text

__all__ = ["message", "node_title", "pick_language", "t"]


# --------------------------------------------------------------------------- messages from the code
# Error messages, notices, sentence reasons and part details are written in English by the code
# (rag.index, rag.agent.nodes, rag.checks). In Chinese mode, the known ones are shown in Chinese; each
# message is split at "; " and every piece is matched on its own, and anything not known stays as
# written (a file name, an HTTP error) rather than being guessed at.
_ZH_MESSAGES: tuple[tuple[str, str], ...] = (
    # books (rag.index.loaders / catalog)
    (r"(?P<name>.+?): the file is empty \(0 bytes\)\.", "{name}：文件是空的（0 字节）。"),
    (r"(?P<name>.+?): file not found\.", "{name}：找不到文件。"),
    (r"(?P<name>.+?): not a file\.", "{name}：不是文件。"),
    (r"(?P<name>.+?): the file is too large \((?P<size>[\d.]+) MB\); the limit is (?P<limit>[\d.]+) MB "
     r"\(setting MAX_BOOK_MB\)\.", "{name}：文件太大（{size} MB），上限是 {limit} MB（设置项 MAX_BOOK_MB）。"),
    (r"(?P<name>.+?): unsupported file type '(?P<suffix>[^']*)'\. Supported formats: (?P<formats>.+?)\.",
     "{name}：不支持的文件类型“{suffix}”。支持的格式：{formats}。"),
    (r"(?P<name>.+?): not a valid EPUB \(it is not a ZIP archive\)\. Supported formats: (?P<formats>.+?)\.",
     "{name}：不是有效的 EPUB（它不是 ZIP 压缩包）。支持的格式：{formats}。"),
    (r"(?P<name>.+?): this is a ZIP archive, not a text file\. Supported formats: (?P<formats>.+?)\.",
     "{name}：这是 ZIP 压缩包，不是文本文件。支持的格式：{formats}。"),
    (r"(?P<name>.+?): this ZIP file is not an EPUB \(no META-INF/container\.xml\)\.",
     "{name}：这个 ZIP 文件不是 EPUB（缺少 META-INF/container.xml）。"),
    (r"(?P<name>.+?): the EPUB archive is damaged(?P<detail>.*)", "{name}：EPUB（ZIP 压缩包）已损坏{detail}"),
    (r"(?P<name>.+?): this EPUB is DRM-protected.*", "{name}：这本 EPUB 受 DRM 保护（正文已加密），无法读取。请使用无 DRM 的版本。"),
    (r"(?P<name>.+?): the EPUB contains no readable text.*", "{name}：EPUB 里没有可读的文字（只有图片或空白页）。"),
    (r"(?P<name>.+?): the book contains no text( to index)?\.", "{name}：书里没有文字。"),
    (r"(?P<name>.+?): .*(ZIP bomb|inflates).*", "{name}：解压后过大，像是 ZIP 炸弹，已拒绝（设置项 MAX_BOOK_MB）。"),
    (r"(?P<name>.+?): unknown text encoding.*",
     "{name}：无法识别文本编码（不是 UTF-8、带 BOM 的 UTF-16 或 GB18030/GBK）。请另存为 UTF-8 再试。"),
    (r"(?P<name>.+?): decoding as (?P<enc>\S+) gives binary garbage.*", "{name}：按 {enc} 解码得到乱码：编码未知或不是文本文件。"),
    (r"no book with id '(?P<id>[^']*)' in the index\.", "书库里没有 id 为“{id}”的书。"),
    # web rounds' notes (rag.search, rag.agent.nodes.web)
    (r"budget (?P<used>\d+)/(?P<total>\w+)(?P<rest>.*)", "搜索额度 {used}/{total}{rest}"),
    (r"cache hit", "缓存命中"),
    (r"cache miss", "缓存未命中"),
    (r"no results", "没有结果"),
    # sentence checks (rag.checks.check_sentence)
    (r"its facts are in the cited sources", "其中的事实见于所引来源"),
    (r"no factual claim", "没有事实性陈述"),
    (r"states facts without citing a source", "陈述了事实，但没有注明来源"),
    (r"cites a source that does not exist: (?P<x>.*)", "引用了不存在的来源：{x}"),
    (r"not in the cited sources: (?P<x>.*)", "所引来源中没有：{x}"),
    (r"attributes to the book what only a web source says", "把只有网络来源的说法说成是书中的"),
    (r"only (?P<p>\d+%) of its words are in the cited sources", "只有 {p} 的词语出现在所引来源中"),
    (r"the model: (?P<label>[a-z]+) \((?P<why>.*)\)", "模型判断：{label}（{why}）"),
    # part checks (rag.checks.verify_part)
    (r"the judge found no evidence for this part", "模型没有为这部分找到证据"),
    (r"quote too short to verify", "引文太短，无法核实"),
    (r"quote verbatim", "引文逐字吻合"),
    (r"quote matched (?P<r>[\d.]+)", "引文近似吻合（{r}）"),
    (r"quote not found in any source", "任何来源中都找不到这段引文"),
    (r"the answer differs from what the quote says", "答案与引文所说不同"),
    (r"answer found in the quoted passage text(?P<where> \(cited \[\d+\], found in \[\d+\]\))?",
     "答案见于引文所在的原文{where}"),
    (r"answer not in the quoted passage text: (?P<x>.*)", "引文所在的原文中没有答案：{x}"),
    (r"yes/no answer", "是非题答案"),
    (r"(?P<n>\d+) content term\(s\) shared with the part", "与问题部分共有 {n} 个实词"),
    (r"\[(?P<n>\d+)\]: (?P<detail>.*)", "[{n}]：{detail}"),
    (r"this part is not a part of the question", "这一部分并不是用户问题的一部分"),
    (r"quote too long to show what states the answer \((?P<n>\d+) characters\)", "引文太长（{n} 字），看不出是哪句说出了答案"),
    (r"the answer only repeats the quote", "答案只是重复了引文"),
    (r"the answer only repeats the question", "答案只是重复了问题"),
    (r"the answer is not a short fact \((?P<n>\d+) characters\)", "答案不是一个简短的事实（{n} 字）"),
    (r"the answer copies the passage but changes it: (?P<x>.*)", "答案照抄原文却改动了其中的字：{x}"),
    (r"the quote's sentence does not speak of this part of the question", "引文所在的句子没有说到问题的这一部分"),
    (r"the quote states the answer \((?P<p>\d+%) of its content\)", "引文说出了答案（内容相符 {p}）"),
    (r"answer not in the quoted passage text: only (?P<p>\d+%) of its content", "引文所在的原文没有说出答案（内容只相符 {p}）"),
    (r"quote (?:verbatim|matched [\d.]+) in the chapter heading", "引文见于章回标题"),
    (r"says what the sources do not confirm", "说明了来源无法确认的内容"),
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
