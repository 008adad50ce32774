"""``verify_answer``: every sentence of the answer checked against the sources it cites
(``rag.checks``); with ``VERIFY_ANSWERS=llm`` the model also labels each cited sentence given only
its sources."""

from __future__ import annotations

from typing import Any

from rag.agent.context import verify_messages
from rag.agent.judge import sources_of
from rag.agent.names import VERIFY
from rag.agent.nodes.common import NodeBase
from rag.agent.state import GraphState, Notice
from rag.checks import Source, check_answer
from rag.i18n import Msg, join
from rag.schemas import SentenceLabel, SentenceResult


class VerifyNode(NodeBase):
    def verify_answer(self, state: GraphState) -> dict[str, Any]:
        if self.settings.verify_answers == "off":
            return {"answer_checks": []}
        passages = state.get("passages") or []
        sources = sources_of(passages, state.get("web_results") or [], self.passage_chars(len(passages)))
        answer = state.get("answer") or ""
        notices: list[Notice] = []
        raw_from = state.get("unprocessed_from")
        if raw_from is not None:  # the sources listed as found are not an answer: never checked as one
            answer = answer[:raw_from]
            notices.append(self._n(VERIFY, "agent.verify_skipped_raw"))
        checked = check_answer(answer, sources, question=state.get("question"))
        results = [SentenceResult(text=c.text, start=c.start, end=c.end, citations=list(c.citations),
                                  status=c.status, reason=c.reason, origin=c.origin) for c in checked.sentences]
        if self.settings.verify_answers == "llm":
            notices += self._model_labels(results, sources)
        return {"answer_checks": results, "notices": notices}

    def _model_labels(self, results: list[SentenceResult], sources: list[Source]) -> list[Notice]:
        """The model's label of every sentence code found supported (``results`` updated in place)."""
        by_number = {src.number: src for src in sources}
        for i, r in enumerate(results):
            if r.status != "supported":
                continue  # code already flagged it; the model can only add doubt
            cited = [by_number[n] for n in r.citations if n in by_number]
            label, errors = self._structured(SentenceLabel, verify_messages(r.text, cited))
            if label is None:
                return [self._n(VERIFY, "agent.verify_failed", "warning", error=self.error(errors[-1]))]
            if label.label in ("unsupported", "contradicted"):
                said = Msg.of("check.sentence_model_label", label=label.label, why=label.reason)
                results[i] = r.model_copy(update={"status": "unsupported", "reason": said})
            elif label.label == "partial":
                said = Msg.of("check.sentence_model_label", label="partly", why=label.reason)
                results[i] = r.model_copy(update={"reason": join([r.reason, said])})
        return []
