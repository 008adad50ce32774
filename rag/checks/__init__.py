"""Evidence that code checks, pure: quotes verified against the passages they claim to come from
(``rag.checks.quotes``) and answer sentences checked against the sources they cite
(``rag.checks.sentences``), on text normalised one way (``rag.checks.text``). Each check says why in a
``rag.i18n.Msg`` (codes ``check.*``: a part's ``detail``, a sentence's ``reason``; ``str()`` is the English
text); code that decides on it reads its status, or its codes (``rag.i18n.codes``), never its wording."""

from rag.checks.facts import CITATION
from rag.checks.quotes import (
    MIN_QUOTE_WEIGHT,
    NOT_FOUND,
    PartCheck,
    PartStatus,
    QuoteMatch,
    Source,
    about_the_part,
    answer_pieces,
    answer_supported,
    is_yes_no,
    match_quote,
    part_of_question,
    question_left_out,
    says_not_found,
    verify_part,
)
from rag.checks.sentences import (
    AnswerCheck,
    SentenceCheck,
    SentenceStatus,
    check_answer,
    check_sentence,
    citations_of,
    split_sentences,
)
from rag.checks.text import Norm, cn_to_int, contains, content, content_weight, coverage, is_han, normalize

__all__ = [
    "CITATION", "MIN_QUOTE_WEIGHT", "NOT_FOUND", "AnswerCheck", "Norm", "PartCheck", "PartStatus", "QuoteMatch",
    "SentenceCheck", "SentenceStatus", "Source", "about_the_part", "answer_pieces", "answer_supported",
    "check_answer", "check_sentence", "citations_of", "cn_to_int", "contains", "content", "content_weight",
    "coverage", "is_han", "is_yes_no", "match_quote", "normalize", "part_of_question", "question_left_out",
    "says_not_found", "split_sentences", "verify_part",
]
