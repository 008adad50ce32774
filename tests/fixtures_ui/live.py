"""The browser tests' scripted turn (question, passages, web results, a slow scripted model that
needs a web round) and the helpers that serve the real app on a loopback port; shared by the
browser, script-API and fault tests."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import ev, judge_reply
from fixtures_index.embedders import HashEmbedder

from rag.schemas import Passage, SearchResult
from rag.testing.fakes import ScriptedChatModel

QUESTION = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"
HOSTILE = "<img src=x onerror=alert(1)>"
# Four sentences as verify_answer marks them: supported (book), supported (web), uncited (with a bare
# URL in Chinese brackets), unsupported (chapter 100 is not in [1]).
LIST_URL = "https://tv.example.net/xiyouji/list"
ANSWER = ("三打白骨精发生在原著第二十七回[1]。在1986年央视版电视剧《西游记》中，这一情节是第11集《三打白骨精》[3][4]。"
          f"另见原著第一百回[1]，悟空在此回被逐回花果山。分集列表见（{LIST_URL}），悟空后来还拜访了东海龙王。")
FOLLOW_UP = "他后来去了哪里？"
FOLLOW_UP_REWRITE = "孙悟空被唐僧赶走后去了哪里？"
FOLLOW_UP_ANSWER = "他回到了花果山[2]。"
PASSAGES = [
    Passage(id="p27", text="第二十七回 尸魔三戏唐三藏 圣僧恨逐美猴王。即“三打白骨精”：白骨夫人三次变化，悟空三次打杀。",
            book_id="demo", book_title="西游记导读", chapter_num=27, chapter_title="第二十七回 尸魔三戏唐三藏",
            score=0.912, source="hybrid"),
    Passage(id="p28", text="第二十八回 花果山群妖聚义 黑松林三藏逢魔。悟空被逐，回到花果山。",
            book_id="demo", book_title="西游记导读", chapter_num=28, chapter_title="第二十八回 花果山群妖聚义",
            score=0.537, source="keyword"),
]
WEB = [
    SearchResult(title=HOSTILE, url="https://example.org/ep11?a=1&b=2", snippet="第11集《三打白骨精》 <script>x</script>",
                 site_name="example.org", date="2024-05-01", provider="fake"),
    SearchResult(title="1986年版《西游记》分集剧情", url="https://tv.example.net/xiyouji/list",
                 snippet="1986年央视版电视剧《西游记》第十一集《三打白骨精》，这一情节的分集剧情。",
                 site_name="tv.example.net", provider="fake"),
    SearchResult(title="javascript link", url="javascript:alert(2)", snippet="must not become a link", provider="fake"),
]
WEB_QUERY = "1986 央视 西游记 三打白骨精 第几集"


class SlowScriptedChatModel(ScriptedChatModel):
    """Streams its text replies slowly enough that the page shows the answer growing."""

    delay_s: float = 0.12

    def _stream(self, *args: Any, **kwargs: Any):
        for chunk in super()._stream(*args, **kwargs):
            time.sleep(self.delay_s)
            yield chunk


def scripted_responder():
    """Route: complex. Evaluation: not enough (book only), then enough (book + web). Text: the
    rewrite of a follow-up, or the answer."""
    state = {"evals": 0}

    def reply(messages: list[Any], *, schema: str | None) -> Any:
        text = "\n".join(str(m.content) for m in messages)
        if schema == "RouteDecision":
            return {"reason": "about the plot of the book and a TV episode", "strategy": "complex"}
        if schema in ("Evaluation", "EvidenceJudgement"):
            state["evals"] += 1
            if "example.org" not in text and "tv.example.net" not in text:
                verdict = ev(False, ["1986年电视剧的集数"], web_query=WEB_QUERY, confidence=0.85,
                             reason="书中有回目，没有电视剧集数")
            else:
                verdict = ev(True, [], confidence=0.9, reason="回目和集数都有来源")
            return judge_reply(schema, verdict, messages)
        system = str(messages[0].content) if messages else ""
        if "standalone question" in system:
            return FOLLOW_UP_REWRITE
        if "花果山" in text and FOLLOW_UP_REWRITE in text:
            return FOLLOW_UP_ANSWER
        return ANSWER

    return reply


def make_index(tmp_path: Path, settings: Any) -> Any:
    """The real book index (Chroma on disk + BM25) in tmp_path, with the instant hash embedder."""
    from rag.index import open_index

    return open_index(settings, embedder=HashEmbedder())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served_app(demo: Any, settings: Any) -> Iterator[str]:
    """``demo`` launched as the app is served (rag.ui.serve.launch) on a free loopback port; its URL."""
    from rag.ui.serve import launch

    port = free_port()
    launch(demo, settings, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        demo.close()
